import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AckPolicy, DeliverPolicy } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusConnection } from '../../src/bus/connect.js';
import { DEFAULT_PUBLISH_POLICY, retryingOnBus } from '../../src/bus/publisher.js';
import {
  chunkMessageId,
  EVENTS_STREAM,
  eventSubject,
  tenantFilter,
  tenantKey,
} from '../../src/bus/subjects.js';
import { startServer } from '../../src/cli/serve.js';
import { MAX_CHUNK_BYTES } from '../../src/collector/bus-messages.js';
import { BusSink } from '../../src/collector/bus-sink.js';
import { acceptedAs } from '../../src/collector/event-sink.js';
import { RegistryBucketWriter } from '../../src/collector/registry-bus.js';
import { publishPolicyOf, publishRegistryToBus } from '../../src/collector/runtime.js';
import { createTenant } from '../../src/tenancy/tenants.js';
import { issueToken } from '../../src/tenancy/tokens.js';
import { type ChildServer, startCli } from '../helpers/cli.js';
import { openTestEnv, type TestEnv, tempDir } from '../helpers/context.js';
import { type EventSpec, envelope, registerEventTypes } from '../helpers/events.js';
import { startTestCluster, type TestCluster } from '../helpers/nats-cluster.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';
import { waitUntil } from '../helpers/wait.js';

/** An envelope with a visitor, so that it needs no identifier. */
const event = (spec: EventSpec) => envelope({ anon: 'visitor', ...spec });

const COLLECTING = /collector listening on (http:\/\/\S+)/;
/** Small enough that a burst of requests crosses it, shared by the two collectors. */
const RATE_LIMIT = 40;

let cluster: TestCluster;
let owner: TestEnv;
let ownerBus: BusConnection;
let admin: BusConnection;
let tokens: Tokens;
/** A collector token of workspace eu, the write key of Segment's API. */
let writeKey: string;
const collectors: ChildServer[] = [];
let noDataDir: string;

const collect = (env: NodeJS.ProcessEnv = {}) =>
  startCli(
    ['--data-dir', noDataDir, 'collect', ...cluster.flags('collector'), '--port', '0'],
    COLLECTING,
    20_000,
    { CDS_COLLECTOR_RATE_LIMIT: String(RATE_LIMIT), ...env },
  ).then((child) => {
    collectors.push(child);
    return child;
  });

/** Every message the stream holds under `filter`, read back by the admin. */
async function readStream(filter: string) {
  const jsm = await admin.manager();
  // After the whole cluster restarted, requests time out until it has elected its leaders.
  const info = await retryingOnBus(
    () =>
      jsm.consumers.add(EVENTS_STREAM, {
        filter_subject: filter,
        ack_policy: AckPolicy.None,
        deliver_policy: DeliverPolicy.All,
      }),
    { ...DEFAULT_PUBLISH_POLICY, budgetMs: 30_000 },
  );
  const consumer = await admin.js.consumers.get(EVENTS_STREAM, info.name);
  const messages: { subject: string; msgID: string; body: string }[] = [];
  while (messages.length < info.num_pending) {
    const batch = await consumer.fetch({
      max_messages: Math.min(1000, info.num_pending - messages.length),
      expires: 2000,
    });
    for await (const message of batch)
      messages.push({
        subject: message.subject,
        msgID: message.headers?.get('Nats-Msg-Id') ?? '',
        body: message.string(),
      });
  }
  await jsm.consumers.delete(EVENTS_STREAM, info.name);
  return messages;
}

/** A message's body cut into its NDJSON lines. */
const linesOf = (body: string) => body.split('\n').filter((line) => line !== '');

const post = (url: string, path: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  cluster = await startTestCluster();
  admin = await cluster.connect('admin');
  ownerBus = await cluster.connect('owner');
  owner = await openTestEnv();
  tokens = await seedTenants(owner.context);
  writeKey = (
    await issueToken(owner.context, 'acme', {
      kind: 'collector',
      workspaceId: 'eu',
      name: 'segment',
    })
  ).token;
  await publishRegistryToBus(owner.context, ownerBus);
  // Through the API: each write is put in the bucket before it is answered.
  await registerEventTypes(owner, tokens.tenant);
  noDataDir = join(tempDir(), 'never-made');
  await Promise.all([collect(), collect()]);
}, 90_000);

afterAll(async () => {
  await Promise.all(collectors.map((child) => child.stop()));
  await owner?.close();
  await cluster?.close();
});

describe('cds collect --bus (issue 30, items 1 and 3)', () => {
  it('needs no data dir: it makes none, and is ready once the registry is loaded', async () => {
    const [first] = collectors;
    const ready = await fetch(`${first?.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(existsSync(noDataDir)).toBe(false);
  });

  it('acknowledges single, batch and Segment requests only with their events in the stream, once each, with subject, msgID and body', async () => {
    const [first, second] = collectors as [ChildServer, ChildServer];
    const runId = randomUUID();
    const single = event({ id: `single-${runId}`, workspace: 'eu' });
    const batch = Array.from({ length: 1000 }, (_, index) =>
      event({ id: `batch-${runId}-${index}`, workspace: 'us' }),
    );
    const crlf = event({ id: `cr\r\nlf-${runId}`, workspace: 'eu' });
    const one = await post(first.url, '/v1/server/events', single, bearer(tokens.collector));
    expect(one.status).toBe(202);
    const many = await post(
      second.url,
      '/v1/server/events/batch',
      { events: batch },
      bearer(tokens.collector),
    );
    expect(many.status).toBe(202);
    expect(await many.json()).toEqual({ accepted: 1000, rejected: [] });
    const odd = await post(first.url, '/v1/server/events', crlf, bearer(tokens.collector));
    expect(odd.status).toBe(202);
    const segment = await post(
      first.url,
      '/v1/batch',
      {
        batch: [
          {
            type: 'track',
            event: 'page_viewed',
            anonymousId: 'v1',
            messageId: `seg-${runId}`,
            properties: { segment_run: runId },
          },
        ],
      },
      { authorization: `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}` },
    );
    expect(segment.status).toBe(200);
    expect(await segment.json()).toMatchObject({ accepted: 1, rejected: [] });
    // The same batch again, through the other collector: the stream drops every copy.
    const resent = await post(
      first.url,
      '/v1/server/events/batch',
      { events: batch },
      bearer(tokens.collector),
    );
    expect(resent.status).toBe(202);

    const stored = (await readStream(tenantFilter('acme'))).filter((message) =>
      message.body.includes(runId),
    );
    // One message per request chunk: the batch's 1,000 events in a few, cut at 256 KiB.
    const chunkOf = (lines: number) =>
      stored.filter((message) => linesOf(message.body).length === lines);
    const byMsgId = new Map(stored.map((message) => [message.msgID, message]));
    expect(byMsgId.size).toBe(stored.length);
    const events = stored.flatMap((message) =>
      linesOf(message.body).map((line) => ({ subject: message.subject, line: JSON.parse(line) })),
    );
    expect(events).toHaveLength(1 + 1000 + 1 + 1);
    expect(new Set(events.map(({ line }) => line.event.id)).size).toBe(events.length);
    const singleStored = byMsgId.get(chunkMessageId('acme', 'eu', [single.id as string]));
    expect(singleStored?.subject).toBe(eventSubject('acme', 'eu'));
    const line = JSON.parse(singleStored?.body ?? '{}');
    expect(line).toMatchObject({ source: 'server', event: single });
    expect(singleStored?.body.endsWith('}\n')).toBe(true);
    // The batch's events, in the order sent, on their workspace's subject, none twice.
    const batchEvents = events.filter(({ line }) => String(line.event.id).startsWith('batch-'));
    expect(batchEvents.map(({ line }) => line.event.id)).toEqual(batch.map((event) => event.id));
    expect(new Set(batchEvents.map(({ subject }) => subject))).toEqual(
      new Set([eventSubject('acme', 'us')]),
    );
    const batchMessages = stored.filter(
      (message) => message.subject === eventSubject('acme', 'us'),
    );
    expect(batchMessages.length).toBeGreaterThan(1);
    expect(batchMessages.length).toBeLessThan(10);
    for (const message of batchMessages)
      expect(Buffer.byteLength(message.body)).toBeLessThanOrEqual(MAX_CHUNK_BYTES);
    expect(chunkOf(1).length).toBe(3);
    expect(byMsgId.get(chunkMessageId('acme', 'eu', [crlf.id as string]))?.body).toContain(
      JSON.stringify(crlf.id),
    );
    const segmentStored = stored.find((message) => message.body.includes('segment_run'));
    expect(segmentStored?.subject).toBe(eventSubject('acme', 'eu'));
  }, 60_000);

  it('puts ids that are not slugs on their own encoded subject, never on another tenant’s', async () => {
    const runId = randomUUID();
    const sink = new BusSink(ownerBus, publishPolicyOf(owner.context.config));
    const line = (tenantId: string, workspaceId: string, eventId: string) => ({
      tenantId,
      workspaceId,
      eventId,
      receivedAt: new Date().toISOString(),
      text: `{"run":"${runId}","tenant":${JSON.stringify(tenantId)}}\n`,
    });
    await sink.append(
      acceptedAs('messages', [
        line('acme.web', 'a.b', 'same'),
        line('acme', 'web', 'same'),
        line('*', '>', 'same'),
      ]),
    );
    await sink.close();
    const acme = (await readStream(tenantFilter('acme'))).filter((message) =>
      message.body.includes(runId),
    );
    expect(acme.map((message) => message.subject)).toEqual(['cds.events.acme.web']);
    const dotted = (await readStream(tenantFilter('acme.web'))).filter((message) =>
      message.body.includes(runId),
    );
    expect(dotted.map((message) => message.subject)).toEqual(['cds.events.acme=2Eweb.a=2Eb']);
  });

  it('refuses a revoked collector token on every collector within 1 s of the 204', async () => {
    const minted = await call(owner.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
      kind: 'collector',
      name: `revoked-${randomUUID()}`,
    });
    expect(minted.statusCode).toBe(201);
    const { token, token_id } = minted.json<{ token: string; token_id: string }>();
    const send = (url: string) =>
      post(url, '/v1/server/events', event({ workspace: 'eu' }), bearer(token)).then(
        (response) => response.status,
      );
    for (const collector of collectors) {
      // Minted through the API: its put was done before the 201, and each collector's watch
      // applies it a few milliseconds later (within the second registry changes are given).
      await expect.poll(() => send(collector.url), { timeout: 1_000, interval: 20 }).toBe(202);
    }
    const revoked = await call(
      owner.app,
      tokens.tenant,
      'DELETE',
      `/v1/tenants/acme/tokens/${token_id}`,
    );
    expect(revoked.statusCode).toBe(204);
    const revokedAt = performance.now();
    const refusedAfter = await Promise.all(
      collectors.map(async (collector) => {
        while ((await send(collector.url)) !== 401) {
          if (performance.now() - revokedAt > 5_000) throw new Error('still accepted after 5 s');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        return performance.now() - revokedAt;
      }),
    );
    // Timing on a shared 2-core machine: noisy, and printed for the report.
    console.log(
      `revocation refused after ${refusedAfter.map((ms) => ms.toFixed(0)).join(', ')} ms`,
    );
    for (const elapsed of refusedAfter) expect(elapsed).toBeLessThan(1_000);
  });

  it('a new workspace, event type and allowed origin reach every collector', async () => {
    const name = `bus_event_${Date.now()}`;
    const origin = 'https://shop.example';
    const workspace = await call(
      owner.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/workspaces/fr',
      {
        allowed_origins: [origin],
      },
    );
    expect(workspace.statusCode).toBe(201);
    const type = await call(
      owner.app,
      tokens.tenant,
      'PUT',
      `/v1/tenants/acme/event-types/${name}`,
      {},
    );
    expect(type.statusCode).toBeLessThan(300);
    // Each collector sees the bucket's change through its watch, within a second of the answer.
    for (const collector of collectors) {
      const send = () =>
        post(collector.url, '/v1/events', event({ workspace: 'fr', name }), {
          'x-tenant-id': 'acme',
          'x-workspace-id': 'fr',
          origin,
        });
      await expect
        .poll(async () => (await send()).status, { timeout: 1_000, interval: 50 })
        .toBe(202);
      expect((await send()).headers.get('access-control-allow-origin')).toBe(origin);
    }
  });

  it('an owner deletes only the keys it put, and a bad entry is skipped while the watch goes on', async () => {
    const entryOf = (tenantId: string) => ({
      tenant_id: tenantId,
      workspaces: ['main'],
      allowed_origins: [],
      event_types: ['page_viewed'],
      collector_tokens: [],
      write_keys: [],
      consent_categories: [],
    });
    const status = (url: string, tenantId: string) =>
      post(url, '/v1/events', event({ tenant: tenantId, workspace: 'main' }), {
        'x-tenant-id': tenantId,
        'x-workspace-id': 'main',
      }).then((response) => response.status);
    const everywhere = async (tenantId: string, expected: number) => {
      for (const collector of collectors)
        await waitUntil(
          async () => (await status(collector.url, tenantId)) === expected,
          `${tenantId} answered ${expected}`,
          1_000,
        );
    };
    const policy = publishPolicyOf(owner.context.config);
    const shardA = await RegistryBucketWriter.open(ownerBus, policy);
    const shardB = await RegistryBucketWriter.open(ownerBus, policy);
    await shardA.publish({
      version: 1,
      generated_at: '',
      tenants: [entryOf('leftco'), entryOf('movedco')],
    });
    await everywhere('leftco', 202);
    await everywhere('movedco', 202);
    // movedco moves to shard B, which puts it, then leaves shard A's database.
    await shardB.publish({ version: 1, generated_at: '', tenants: [entryOf('movedco')] });
    await shardA.publish({ version: 2, generated_at: '', tenants: [entryOf('leftco')] });
    // A bad entry among them: skipped, and the changes after it still arrive.
    const registry = await ownerBus.kvm.open('cds_registry');
    await registry.put(tenantKey('badco'), 'not an entry');
    await shardA.publish({ version: 3, generated_at: '', tenants: [] });
    await everywhere('leftco', 404);
    await everywhere('movedco', 202);
    expect(await registry.get(tenantKey('movedco'))).toMatchObject({ operation: 'PUT' });
  });

  it('shares the rate limit among live collectors, and takes the whole of it back within about 6 s of one stopping', async () => {
    const { token } = await issueToken(owner.context, 'acme', {
      kind: 'collector',
      workspaceId: null,
      name: `limited-${randomUUID()}`,
    });
    // Written outside the API: published by hand, as the API would after it.
    const { publishRegistry } = await import('../../src/collector/runtime.js');
    await publishRegistry(owner.context);
    const [first, second] = collectors as [ChildServer, ChildServer];
    const burst = async (url: string) => {
      const statuses = await Promise.all(
        Array.from({ length: RATE_LIMIT }, () =>
          post(url, '/v1/server/events', event({ workspace: 'eu' }), bearer(token)).then(
            (response) => response.status,
          ),
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 1_100));
      return statuses.filter((status) => status === 202).length;
    };
    await waitUntil(async () => (await send202(first.url, token)) === 202, 'the token', 5_000);
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const shared = await burst(first.url);
    expect(shared).toBeGreaterThanOrEqual(RATE_LIMIT / 2);
    expect(shared).toBeLessThan(RATE_LIMIT * 0.75);
    second.child.kill('SIGKILL');
    const killedAt = performance.now();
    let whole = 0;
    while (whole < RATE_LIMIT * 0.9) {
      if (performance.now() - killedAt > 12_000) throw new Error(`still ${whole} after 12 s`);
      whole = await burst(first.url);
    }
    console.log(
      `whole limit back ${((performance.now() - killedAt) / 1000).toFixed(1)} s after the kill`,
    );
    expect(performance.now() - killedAt).toBeLessThan(10_000);
  }, 30_000);

  it('cds serve --bus: puts its tenants in the bucket, publishes the events its own collector takes, and refuses a revoked token at once', async () => {
    const env = await openTestEnv({
      config: {
        bus: cluster.servers.join(','),
        bus_creds: cluster.creds.owner,
        bus_ca: cluster.tls.caFile,
        port: 0,
        shard: 'serve-shard',
        // Owners of one cluster share its master key, which the bus key derives from.
        master_key: owner.context.dataDir.masterKey.toString('hex'),
      },
    });
    const { token: tenantToken } = await createTenant(env.context, 'serveco', ['main']);
    const server = await startServer(env.context, { logRequests: false, ingest: false });
    try {
      expect(server.bus?.role).toBe('owner');
      const api = (method: string, path: string, body?: unknown) =>
        fetch(`${server.url}${path}`, {
          method,
          headers: {
            ...bearer(tenantToken),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });
      expect((await api('PUT', '/v1/tenants/serveco/event-types/page_viewed', {})).status).toBe(
        201,
      );
      const minted = await api('POST', '/v1/tenants/serveco/tokens', {
        kind: 'collector',
        name: 'backend',
      });
      const { token, token_id } = (await minted.json()) as { token: string; token_id: string };
      const runId = randomUUID();
      const serveEvent = () =>
        event({ tenant: 'serveco', workspace: 'main', properties: { run: runId } });
      const [other] = collectors as [ChildServer];
      for (const url of [server.url, other.url]) {
        const response = await post(url, '/v1/server/events', serveEvent(), bearer(token));
        expect(response.status).toBe(202);
      }
      const stored = (await readStream(tenantFilter('serveco'))).filter((message) =>
        message.body.includes(runId),
      );
      expect(stored.map((message) => message.subject)).toEqual([
        eventSubject('serveco', 'main'),
        eventSubject('serveco', 'main'),
      ]);
      expect((await api('DELETE', `/v1/tenants/serveco/tokens/${token_id}`)).status).toBe(204);
      const ownRefusal = await post(server.url, '/v1/server/events', serveEvent(), bearer(token));
      expect(ownRefusal.status).toBe(401);
      await waitUntil(
        async () =>
          (await post(other.url, '/v1/server/events', serveEvent(), bearer(token))).status === 401,
        'cds collect refusing the revoked token',
        1_000,
      );
    } finally {
      await server.close();
      await env.app.close();
    }
  }, 60_000);

  it('answers 503 bus_unavailable with retry-after once its budget is spent with the bus down; the batch sent again is stored once', async () => {
    const short = await collect({ CDS_BUS_PUBLISH_BUDGET_MS: '2000' });
    const runId = randomUUID();
    const events = Array.from({ length: 50 }, (_, index) =>
      event({ id: `down-${runId}-${index}`, workspace: 'eu' }),
    );
    const send = () =>
      post(short.url, '/v1/server/events/batch', { events }, bearer(tokens.collector));
    await Promise.all(cluster.nodes.map((_, index) => cluster.kill(index)));
    const sentAt = performance.now();
    const refused = await send();
    const waited = performance.now() - sentAt;
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(await refused.json()).toMatchObject({ error: { code: 'bus_unavailable' } });
    expect(waited).toBeGreaterThanOrEqual(1_500);
    expect(waited).toBeLessThan(10_000);
    await Promise.all(cluster.nodes.map((_, index) => cluster.start(index)));
    await waitUntil(async () => (await send()).status === 202, 'the bus back', 60_000);
    const stored = (await readStream(tenantFilter('acme'))).filter((message) =>
      message.body.includes(runId),
    );
    // One message, its events once each: every attempt published the same chunk, msgID and all.
    expect(stored).toHaveLength(1);
    expect(linesOf(stored[0]?.body ?? '').map((line) => JSON.parse(line).event.id)).toEqual(
      events.map((sent) => sent.id),
    );
    // Stopped by a signal, it closes its sink, its heartbeat and its connection, and exits 0.
    expect(await short.stop()).toBe(0);
  }, 120_000);
});

const send202 = (url: string, token: string) =>
  post(url, '/v1/server/events', event({ workspace: 'eu' }), bearer(token)).then(
    (response) => response.status,
  );
