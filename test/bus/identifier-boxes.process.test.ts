import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUS_KEY_ENTRY, ensureBusKey, readBusKey } from '../../src/bus/bus-key.js';
import type { BusConnection } from '../../src/bus/connect.js';
import { BUCKETS } from '../../src/bus/setup.js';
import { EVENTS_STREAM } from '../../src/bus/subjects.js';
import { ConfigError } from '../../src/errors.js';
import {
  type CdsCluster,
  type ClusterTenant,
  type Owner,
  startCdsCluster,
} from '../helpers/cds-cluster.js';
import { runCli } from '../helpers/cli.js';
import { basicAuth } from '../helpers/tracking-api.js';
import { waitUntil } from '../helpers/wait.js';

/**
 * Issue 36: the events stream holds no identifier value. Owners and collectors are the real CLI
 * as child processes on a three-node cluster; the stream's block files are read as bytes.
 */

let cluster: CdsCluster;
let owner: Owner;
let acme: ClusterTenant;
let writeKey: string;
let admin: BusConnection;
const run = randomUUID().slice(0, 8);
const HOUR_MS = 3600 * 1000;

beforeAll(async () => {
  cluster = await startCdsCluster();
  owner = await cluster.startOwner('a');
  await cluster.startCollector(0);
  acme = await cluster.createTenant('acme', 'a', owner);
  admin = await cluster.nats.connect('admin');
  for (const name of ['order_completed', 'identify'])
    expect((await api('PUT', `/v1/tenants/acme/event-types/${name}`, {})).status).toBe(201);
  const minted = await api('POST', '/v1/tenants/acme/tokens', {
    kind: 'collector',
    name: 'server',
    workspace_id: 'web',
  });
  writeKey = (minted.body as { token: string }).token;
  // The collector learns the workspace, its event types and the token through the bucket.
  await waitUntil(
    async () => (await send('/v1/server/events', nativeEvent(`probe-${run}`, {}))) === 202,
    'the collector to know acme',
    30_000,
  );
}, 180_000);

afterAll(async () => {
  await cluster?.close();
});

async function api(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const response = await fetch(`${owner.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${acme.token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

function nativeEvent(id: string, identifiers: Record<string, string>, plan = 'none') {
  return {
    envelop_version: '1.0',
    id,
    name: 'page_view',
    tenant_id: 'acme',
    workspace_id: 'web',
    occured_at: new Date().toISOString(),
    properties: { plan, identifiers: { user_ref: `ref-${id}`, ...identifiers } },
  };
}

/** Through the `cds collect` process, or another base URL (an owner's own collector). */
async function send(path: string, body: unknown, base?: string): Promise<number> {
  const url = base ?? cluster.collectors[0]?.url;
  const response = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: path.startsWith('/v1/server/') ? `Bearer ${writeKey}` : basicAuth(writeKey),
    },
    body: JSON.stringify(body),
  });
  return response.status;
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath ?? (entry as { path: string }).path, entry.name));
}

/** Every file of every node's JetStream store that holds the events stream, as bytes. */
async function streamFiles(): Promise<{ path: string; bytes: Buffer }[]> {
  const files: { path: string; bytes: Buffer }[] = [];
  for (const node of cluster.nats.nodes)
    for (const path of await filesUnder(node.storeDir))
      if (path.includes(EVENTS_STREAM)) files.push({ path, bytes: await readFile(path) });
  return files;
}

async function lookup(query: string): Promise<{ status: number; body: unknown }> {
  return api('GET', `/v1/tenants/acme/workspaces/web/profiles/lookup?${query}`);
}

describe('identifiers in the events stream', () => {
  const email = `Ann.Box-${run}@Shop.Test`;
  const phone = `98765 ${run.replace(/\D/g, '').padEnd(5, '1').slice(0, 5)}`;
  const segmentEmail = `Seg.Trait-${run}@Shop.Test`;
  const segmentPhone = `+91 91234 ${run.replace(/\D/g, '').padEnd(5, '2').slice(0, 5)}`;
  const contextEmail = `ctx-${run}@shop.test`;
  const control = `plan-${run}`;

  it('are boxed on every node, and owners still store and resolve them', async () => {
    expect(
      await send('/v1/server/events', nativeEvent(`n-${run}`, { email, phone }, control)),
    ).toBe(202);
    // The owner's own collector (cds serve) boxes as cds collect does.
    expect(
      await send(
        '/v1/server/events',
        nativeEvent(`o-${run}`, { email: `owner-${email}` }, control),
        owner.url,
      ),
    ).toBe(202);
    expect(
      await send('/v1/identify', {
        userId: `u-${run}`,
        traits: { email: segmentEmail, phone: segmentPhone, plan: control },
        messageId: `i-${run}`,
      }),
    ).toBe(200);
    expect(
      await send('/v1/track', {
        event: 'Order Completed',
        anonymousId: `anon-${run}`,
        context: { traits: { email: contextEmail } },
        properties: { plan: control },
        messageId: `t-${run}`,
      }),
    ).toBe(200);
    // A batch past 64 KiB is checked, and boxed, on an intake worker thread.
    const batch = Array.from({ length: 400 }, (_, index) =>
      nativeEvent(`b-${run}-${index}`, { email: `batch-${index}-${run}@shop.test` }, control),
    );
    expect(JSON.stringify({ events: batch }).length).toBeGreaterThan(64 * 1024);
    expect(await send('/v1/server/events/batch', { events: batch })).toBe(202);
    await cluster.drained();

    const files = await streamFiles();
    expect(files.length).toBeGreaterThanOrEqual(3);
    const all = Buffer.concat(files.map((file) => file.bytes));
    // The files read are the ones that hold the events: their other values are there.
    expect(all.includes(control)).toBe(true);
    const digits = (value: string) => value.replace(/\D/g, '');
    const forbidden = [
      email,
      email.toLowerCase(),
      `owner-${email}`.toLowerCase(),
      segmentEmail,
      segmentEmail.toLowerCase(),
      contextEmail,
      phone,
      digits(phone),
      `+91${digits(phone)}`,
      segmentPhone,
      digits(segmentPhone),
      `u-${run}`,
      `ref-n-${run}`,
      `batch-0-${run}`,
      `batch-399-${run}`,
    ];
    for (const file of files)
      for (const value of forbidden)
        expect(file.bytes.includes(value), `${value} in ${file.path}`).toBe(false);
    expect(all.includes('cdsbox1.')).toBe(true);

    // The owner opened them: each resolves to a profile.
    await waitUntil(
      async () => (await lookup(`email=${encodeURIComponent(email)}`)).status === 200,
      'the native event to be stored',
      30_000,
    );
    const byEmail = await lookup(`email=${encodeURIComponent(email.toLowerCase())}`);
    const byPhone = await lookup(`phone=${encodeURIComponent(`+91${digits(phone)}`)}`);
    expect(byEmail.status).toBe(200);
    expect(byPhone.body).toEqual(byEmail.body);
    const bySegment = await lookup(`email=${encodeURIComponent(segmentEmail)}`);
    expect(bySegment.status).toBe(200);
    expect((await lookup(`phone=${encodeURIComponent(segmentPhone)}`)).body).toEqual(
      bySegment.body,
    );
    expect((await lookup(`email=${encodeURIComponent(contextEmail)}`)).status).toBe(200);
    expect((await lookup(`email=${encodeURIComponent(`owner-${email}`)}`)).status).toBe(200);
    expect((await lookup(`email=batch-399-${run}%40shop.test`)).status).toBe(200);
  }, 120_000);

  it('an erasure says when the last stream copy expires, in the API and the CLI', async () => {
    const found = await lookup(`email=${encodeURIComponent(email)}`);
    const profileId = (found.body as { profile_id: string }).profile_id;
    const erased = await api('DELETE', `/v1/tenants/acme/workspaces/web/profiles/${profileId}`);
    expect(erased.status).toBe(200);
    const listed = await api('GET', '/v1/tenants/acme/erasures');
    const [record] = (
      listed.body as {
        erasures: { profile_id: string; erased_at: string; stream_copies_expire_at: string }[];
      }
    ).erasures;
    expect(record?.profile_id).toBe(profileId);
    // `cds bus init` without --max-age-hours: 48 h.
    expect(
      Date.parse(record?.stream_copies_expire_at ?? '') - Date.parse(record?.erased_at ?? ''),
    ).toBe(48 * HOUR_MS);
    const cli = await cluster.cds([
      '--server',
      owner.url,
      '--token',
      acme.token,
      'erasures',
      'list',
      '-t',
      'acme',
    ]);
    const [header, row] = cli.stdout.split('\n');
    expect(header).toMatch(/PURGED_AT\s+STREAM_COPIES_EXPIRE_AT$/);
    expect(row).toContain(`${profileId} `);
    expect(row).toMatch(new RegExp(`${record?.stream_copies_expire_at}$`));
  }, 60_000);

  it('the stream keeps 48 hours unless told otherwise', async () => {
    const info = await (await admin.manager()).streams.info(EVENTS_STREAM);
    expect(info.config.max_age / 1e6).toBe(48 * HOUR_MS);
  });
});

describe('bus key rotation', () => {
  it('boxes of the old key still in the stream are opened after a rotation', async () => {
    const before = await readBusKey(admin);
    expect(before).not.toBeNull();
    await cluster.stop(owner);
    const oldEmail = `old-key-${run}@shop.test`;
    expect(await send('/v1/server/events', nativeEvent(`old-${run}`, { email: oldEmail }))).toBe(
      202,
    );
    const rotated = JSON.parse(
      (await cluster.cds(['--json', 'bus', 'rotate-key', ...cluster.busArgs('owner')])).stdout,
    ) as { key_id: string; previous_key_id: string; previous_key_needed_until: string };
    expect(rotated.previous_key_id).toBe(before?.key_id);
    expect(rotated.key_id).not.toBe(before?.key_id);
    expect(Date.parse(rotated.previous_key_needed_until) - Date.now()).toBeGreaterThan(
      47 * HOUR_MS,
    );
    const newEmail = `new-key-${run}@shop.test`;
    // The collector boxes to the new key once the bucket's watch delivered it.
    await waitUntil(
      async () => {
        expect(
          await send(
            '/v1/server/events',
            nativeEvent(`new-${run}-${randomUUID()}`, { email: newEmail }),
          ),
        ).toBe(202);
        const files = await streamFiles();
        return files.some((file) => file.bytes.includes(`cdsbox1.${rotated.key_id}.`));
      },
      'an event boxed to the new key',
      30_000,
    );
    owner = await cluster.startOwner('a');
    await cluster.drained();
    expect((await lookup(`email=${encodeURIComponent(oldEmail)}`)).status).toBe(200);
    expect((await lookup(`email=${encodeURIComponent(newEmail)}`)).status).toBe(200);
  }, 120_000);

  it('refuses to rotate without the master key', async () => {
    const before = (await readBusKey(admin))?.key_id;
    // Not cluster.cds, which gives the cluster's CDS_MASTER_KEY.
    const nowhere = join(cluster.root, 'nowhere');
    const result = await runCli(['bus', 'rotate-key', '-d', nowhere, ...cluster.busArgs('owner')]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`${join(nowhere, 'master.key')} does not exist`);
    expect((await readBusKey(admin))?.key_id).toBe(before);
  });
});

describe('a collector without a bus key', () => {
  it('takes no event and is not ready, until an owner publishes one', async () => {
    const kv = await admin.kvm.open(BUCKETS.registry);
    const collectorUrl = cluster.collectors[0]?.url as string;
    await kv.delete(BUS_KEY_ENTRY);
    try {
      await waitUntil(
        async () => (await fetch(`${collectorUrl}/readyz`)).status === 503,
        'the collector to see the bus key gone',
        10_000,
      );
      const ready = await fetch(`${collectorUrl}/readyz`);
      expect(ready.headers.get('retry-after')).toBe('5');
      expect(((await ready.json()) as { error: { message: string } }).error.message).toMatch(
        /^no bus key is published yet/,
      );
      expect(
        await send(
          '/v1/server/events',
          nativeEvent(`nokey-${run}`, { email: `nokey-${run}@shop.test` }),
        ),
      ).toBe(503);
    } finally {
      await ensureBusKey(admin, Buffer.from(cluster.masterKey, 'hex'), new Date().toISOString());
    }
    await waitUntil(
      async () => (await fetch(`${collectorUrl}/readyz`)).status === 200,
      'the collector to see the new bus key',
      10_000,
    );
    expect(
      await send('/v1/server/events', nativeEvent(`key-${run}`, { email: `key-${run}@shop.test` })),
    ).toBe(202);
  }, 60_000);
});

describe('the bus key at an owner’s start', () => {
  it('is refused when it was not made with this master key', async () => {
    await expect(
      ensureBusKey(admin, Buffer.alloc(32, 9), new Date().toISOString()),
    ).rejects.toThrow(ConfigError);
    const { key_id } = (await readBusKey(admin)) ?? { key_id: '' };
    await expect(
      ensureBusKey(admin, Buffer.from(cluster.masterKey, 'hex'), new Date().toISOString()),
    ).resolves.toMatchObject({ key_id });
  });
});
