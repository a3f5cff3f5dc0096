import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { JetStreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll } from 'vitest';
import type { BusConnection } from '../../src/bus/connect.js';
import {
  durableName,
  EVENTS_STREAM,
  eventMessageId,
  eventSubject,
  tenantFilter,
} from '../../src/bus/subjects.js';
import type { Envelope } from '../../src/collector/envelope.js';
import { landingLineText } from '../../src/collector/envelope.js';
import { createTenant } from '../../src/tenancy/tenants.js';
import { type ChildServer, startCli } from './cli.js';
import { openTestEnvIn } from './context.js';
import { envelope } from './events.js';
import { startTestCluster, type TestCluster } from './nats-cluster.js';
import { call } from './tenant.js';

/** A file's NATS cluster, its admin and collector connections, and the owners it started. */
export interface OwnerCluster {
  cluster: TestCluster;
  admin: BusConnection;
  collector: BusConnection;
  /** Starts `cds serve --bus … --shard <shard>` over `dir`, stopped with the cluster. */
  owner(shard: string, dir: string): Promise<ChildServer>;
}

/**
 * Starts a test cluster before the file's tests, with an admin and a collector connection, and
 * stops every owner `owner()` started and then the cluster after them: the set-up every cluster
 * test of owners shares.
 */
export function useOwnerCluster(): OwnerCluster {
  const running: ChildServer[] = [];
  const shared = {
    owner: async (shard: string, dir: string) => {
      const child = await startOwnerProcess(shared.cluster, shard, dir);
      running.push(child);
      return child;
    },
  } as OwnerCluster;
  beforeAll(async () => {
    shared.cluster = await startTestCluster();
    shared.admin = await shared.cluster.connect('admin');
    shared.collector = await shared.cluster.connect('collector');
  }, 60_000);
  afterAll(async () => {
    await Promise.all(running.map((child) => child.stop()));
    await shared.cluster?.close();
  });
  return shared;
}

/** Every owner of a test cluster shares it, as the owners of a real one do. */
export const SHARED_MASTER_KEY = 'ab'.repeat(32);

/** Tenants with workspace `w1` and event type `page_viewed`, in a data dir of its own. */
export async function seedShardDir(dir: string, tenants: readonly string[]): Promise<void> {
  const env = await openTestEnvIn(dir, { config: { master_key: SHARED_MASTER_KEY } });
  try {
    for (const tenant of tenants) {
      const issued = await createTenant(env.context, tenant, ['w1']);
      const response = await call(
        env.app,
        issued.token,
        'PUT',
        `/v1/tenants/${tenant}/event-types/page_viewed`,
        {},
      );
      if (response.statusCode >= 300) throw new Error(response.body);
    }
  } finally {
    await env.close({ keepDir: true });
  }
}

/** `cds serve --bus … --shard NAME` as a child process, ready once it logs its URL. */
export function startOwnerProcess(
  cluster: TestCluster,
  shard: string,
  dir: string,
  env: NodeJS.ProcessEnv = {},
): Promise<ChildServer> {
  return startCli(
    ['serve', ...cluster.flags('owner'), '--shard', shard, '--port', '0', '--quiet', '-d', dir],
    /cds listening on (http:\/\/\S+)/,
    60_000,
    { CDS_MASTER_KEY: SHARED_MASTER_KEY, ...env },
  );
}

/** A server event of `tenant` as a collector publishes it: its landing line, msgID scoped. */
export function publishEvent(
  bus: BusConnection,
  tenant: string,
  id: string,
  body?: string,
): Promise<unknown> {
  const event = envelope({
    id,
    tenant,
    workspace: 'w1',
    identifiers: { email: `${id}@shop.test` },
  }) as unknown as Envelope;
  const text = body ?? landingLineText(new Date().toISOString(), 'server', 'test-collector', event);
  return bus.js.publish(eventSubject(tenant, 'w1'), text, {
    msgID: eventMessageId(tenant, 'w1', id),
    timeout: 5000,
  });
}

/** Publishes `count` events of `tenant` (ids `<prefix>-<n>`), 200 at a time; returns the ids. */
export async function publishMany(
  bus: BusConnection,
  tenant: string,
  count: number,
  prefix = randomUUID().slice(0, 8),
): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, index) => `${prefix}-${index}`);
  for (let start = 0; start < ids.length; start += 200)
    await Promise.all(ids.slice(start, start + 200).map((id) => publishEvent(bus, tenant, id)));
  return ids;
}

/** The stream sequence of the tenant's last message now, or 0 when it has none. */
async function lastSequenceOf(jsm: JetStreamManager, tenant: string): Promise<number> {
  const info = await jsm.streams.info(EVENTS_STREAM, { subjects_filter: tenantFilter(tenant) });
  const lasts = await Promise.all(
    Object.keys(info.state.subjects ?? {}).map(
      async (subject) =>
        (await jsm.streams.getMessage(EVENTS_STREAM, { last_by_subj: subject }))?.seq ?? 0,
    ),
  );
  return Math.max(0, ...lasts);
}

/**
 * Waits until the tenants' consumers have acknowledged (so their owner committed) every message
 * the stream held for them when called. Nothing pending is not enough: a consumer whose leader
 * is the replica a publish has not reached yet counts that message as neither pending nor
 * delivered, so the ack floor is compared with the stream's last sequence too.
 */
export async function waitDrained(
  admin: BusConnection,
  tenants: readonly string[],
  timeoutMs = 60_000,
): Promise<void> {
  const jsm = await admin.manager();
  const lastSeqs = await Promise.all(tenants.map((tenant) => lastSequenceOf(jsm, tenant)));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const infos = await Promise.all(
      tenants.map((tenant) =>
        jsm.consumers.info(EVENTS_STREAM, durableName(tenant)).catch(() => null),
      ),
    );
    if (
      infos.every(
        (info, at) =>
          info !== null &&
          info.num_pending === 0 &&
          info.num_ack_pending === 0 &&
          info.ack_floor.stream_seq >= (lastSeqs[at] ?? 0),
      )
    )
      return;
    if (Date.now() > deadline)
      throw new Error(
        `consumers not drained to ${JSON.stringify(lastSeqs)}: ${JSON.stringify(infos.map((i) => i && [i.name, i.num_pending, i.num_ack_pending, i.ack_floor.stream_seq]))}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

export interface ShardRows {
  /** Event id → how many times it is stored, per tenant. */
  events: Map<string, Map<string, number>>;
  offsets: Map<string, number>;
  /** Profiles per tenant. */
  profiles: Map<string, number>;
}

/** What a closed shard's database holds: its events by tenant and id, and its bus offsets. */
export async function shardRows(dir: string): Promise<ShardRows> {
  const instance = await DuckDBInstance.create(join(dir, 'cds.duckdb'), {
    access_mode: 'READ_ONLY',
  });
  const connection = await instance.connect();
  try {
    const events = new Map<string, Map<string, number>>();
    const rows = (
      await connection.runAndReadAll(
        'SELECT tenant_id, event_id, count(*)::INTEGER AS n FROM events GROUP BY ALL',
      )
    ).getRowObjectsJson();
    for (const row of rows) {
      const tenant = String(row.tenant_id);
      if (!events.has(tenant)) events.set(tenant, new Map());
      events.get(tenant)?.set(String(row.event_id), Number(row.n));
    }
    const offsets = new Map(
      (await connection.runAndReadAll('SELECT tenant_id, last_seq::DOUBLE AS s FROM bus_offsets'))
        .getRowObjectsJson()
        .map((row) => [String(row.tenant_id), Number(row.s)] as const),
    );
    const profiles = new Map(
      (
        await connection.runAndReadAll(
          'SELECT tenant_id, count(*)::INTEGER AS n FROM profiles GROUP BY ALL',
        )
      )
        .getRowObjectsJson()
        .map((row) => [String(row.tenant_id), Number(row.n)] as const),
    );
    return { events, offsets, profiles };
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** Whether each id is stored exactly once for the tenant, and the ids that are not. */
export function exactlyOnce(
  rows: ShardRows,
  tenant: string,
  ids: readonly string[],
): { missing: string[]; doubled: string[]; extra: number } {
  const stored = rows.events.get(tenant) ?? new Map<string, number>();
  const wanted = new Set(ids);
  return {
    missing: ids.filter((id) => !stored.has(id)),
    doubled: [...stored].filter(([, n]) => n > 1).map(([id]) => id),
    extra: [...stored.keys()].filter((id) => !wanted.has(id)).length,
  };
}
