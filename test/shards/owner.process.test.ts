import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { JsMsg } from '@nats-io/jetstream';
import { describe, expect, it } from 'vitest';
import type { BusConnection } from '../../src/bus/connect.js';
import { natsPackages } from '../../src/bus/connect.js';
import { durableName, EVENTS_STREAM, tenantFilter } from '../../src/bus/subjects.js';
import { busMessagesOf } from '../../src/collector/bus-messages.js';
import { type Envelope, landingLineText } from '../../src/collector/envelope.js';
import type { LandingLine } from '../../src/collector/landing-writer.js';
import type { Context } from '../../src/context.js';
import { ingestBatch } from '../../src/ingest/batch.js';
import { listQuarantine, quarantinedLinesPath } from '../../src/quarantine/quarantine.js';
import { ensureConsumers } from '../../src/shards/consumers.js';
import { type PulledMessage, pull } from '../../src/shards/pull.js';
import { ShardMap } from '../../src/shards/shard-map.js';
import { busEventsOf, MAX_ACK_PENDING, StreamLoop } from '../../src/shards/stream-loop.js';
import { readOffsets, streamSource } from '../../src/shards/stream-source.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import {
  exactlyOnce,
  publishEvent,
  publishMany,
  SHARED_MASTER_KEY,
  seedShardDir,
  shardRows,
  useOwnerCluster,
  waitDrained,
} from '../helpers/bus-owners.js';
import { runCli } from '../helpers/cli.js';
import { openTestEnvIn, tempDir } from '../helpers/context.js';
import { envelope } from '../helpers/events.js';

const bus = useOwnerCluster();

describe('cds serve --bus --shard: owners consume their tenants exactly once', () => {
  it('refuses --bus without --shard', async () => {
    const result = await runCli([
      'serve',
      ...bus.cluster.flags('owner'),
      '--port',
      '0',
      '-d',
      tempDir(),
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/--shard/);
  });

  it('stores every event once in its tenant’s shard, through an owner killed mid-load', async () => {
    const dirA = tempDir();
    const dirB = tempDir();
    await Promise.all([seedShardDir(dirA, ['alpha', 'amber']), seedShardDir(dirB, ['beta'])]);
    const [a, b] = await Promise.all([bus.owner('a', dirA), bus.owner('b', dirB)]);
    const map = await ShardMap.open(bus.admin);
    // Tenants in a database the map did not know are assigned to that database's shard.
    expect((await map.list()).map((entry) => [entry.tenantId, entry.assignment.shard])).toEqual([
      ['alpha', 'a'],
      ['amber', 'a'],
      ['beta', 'b'],
    ]);

    const first = {
      alpha: await publishMany(bus.collector, 'alpha', 600),
      amber: await publishMany(bus.collector, 'amber', 300),
      beta: await publishMany(bus.collector, 'beta', 600),
    };
    // SIGKILL a mid-load: its batch under way is lost or committed unacked; b goes on.
    await new Promise((resolve) => setTimeout(resolve, 400));
    a.child.kill('SIGKILL');
    const second = {
      alpha: await publishMany(bus.collector, 'alpha', 500),
      beta: await publishMany(bus.collector, 'beta', 500),
    };
    await waitDrained(bus.admin, ['beta']);
    const restarted = await bus.owner('a', dirA);
    const third = { amber: await publishMany(bus.collector, 'amber', 200) };
    await waitDrained(bus.admin, ['alpha', 'amber', 'beta']);
    // A stop lets the batch under way commit and be acked, then exits cleanly.
    expect(await restarted.stop()).toBe(0);
    expect(await b.stop()).toBe(0);

    const rowsA = await shardRows(dirA);
    const rowsB = await shardRows(dirB);
    const clean = { missing: [], doubled: [], extra: 0 };
    expect(exactlyOnce(rowsA, 'alpha', [...first.alpha, ...second.alpha])).toEqual(clean);
    expect(exactlyOnce(rowsA, 'amber', [...first.amber, ...third.amber])).toEqual(clean);
    expect(exactlyOnce(rowsB, 'beta', [...first.beta, ...second.beta])).toEqual(clean);
    expect(rowsA.events.has('beta')).toBe(false);
    expect(rowsB.events.has('alpha')).toBe(false);
    expect(rowsB.events.has('amber')).toBe(false);
    expect(rowsA.offsets.get('alpha')).toBeGreaterThan(0);
    expect(rowsB.offsets.get('beta')).toBeGreaterThan(0);
  }, 180_000);

  it('costs a bad event only that event', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['gamma']);
    const before = await publishMany(bus.collector, 'gamma', 50);
    // Not JSON, and an envelope of a workspace the tenant does not have.
    await publishEvent(bus.collector, 'gamma', 'garbage', 'this is not a landing line');
    await publishEvent(
      bus.collector,
      'gamma',
      'unknown-ws',
      JSON.stringify({
        received_at: new Date().toISOString(),
        source: 'server',
        collector_id: 'c',
        event: {
          envelop_version: '1.0',
          id: 'unknown-ws',
          name: 'page_viewed',
          tenant_id: 'gamma',
          workspace_id: 'nope',
          occured_at: '2026-03-01T10:00:00.000Z',
          properties: { identifiers: { email: 'x@shop.test' } },
        },
      }),
    );
    const after = await publishMany(bus.collector, 'gamma', 50);
    const g = await bus.owner('g', dir);
    await waitDrained(bus.admin, ['gamma']);
    await g.stop();
    const rows = await shardRows(dir);
    expect(exactlyOnce(rows, 'gamma', [...before, ...after])).toEqual({
      missing: [],
      doubled: [],
      extra: 0,
    });
  }, 120_000);
});

/** Event id → how many times the shard's database holds it, for one tenant. */
async function storedIds(context: Context, tenant: string): Promise<Map<string, number>> {
  const rows = await context.store.read((session) =>
    session.allText<{ event_id: string; n: number }>(
      'SELECT event_id, count(*)::INTEGER AS n FROM events WHERE tenant_id = $tenant GROUP BY ALL',
      { tenant },
    ),
  );
  return new Map(rows.map((row) => [row.event_id, row.n]));
}

async function fetchNow(bus: BusConnection, tenant: string): Promise<JsMsg[]> {
  const consumer = await bus.js.consumers.get(EVENTS_STREAM, durableName(tenant));
  const messages: JsMsg[] = [];
  for await (const message of await consumer.fetch({
    max_messages: MAX_ACK_PENDING,
    expires: 1000,
  }))
    messages.push(message);
  return messages;
}

/**
 * `bus` whose first pull fails as a loaded machine makes one fail ("heartbeats missed") after
 * returning `returned` of the messages it was given; `lastReturned` is the sequence it stopped at.
 */
function failingFirstFetch(bus: BusConnection, returned: number) {
  const state = { failed: false, lastReturned: 0 };
  const subscribe: BusConnection['nc']['subscribe'] = (subject, options) => {
    const callback = options?.callback;
    if (state.failed || !subject.includes('.pull.') || !callback)
      return bus.nc.subscribe(subject, options);
    state.failed = true;
    let count = 0;
    return bus.nc.subscribe(subject, {
      ...options,
      callback: (error, message) => {
        if (count >= returned) return;
        if (error || (message.headers?.code ?? 0) !== 0) return callback(error, message);
        callback(null, message);
        state.lastReturned = Number(message.reply?.split('.')[5]);
        if (++count === returned) callback(new Error('heartbeats missed'), message);
      },
    });
  };
  const nc = new Proxy(bus.nc, {
    get(target, property) {
      if (property === 'subscribe') return subscribe;
      const value = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { bus: { ...bus, nc } as BusConnection, state };
}

describe('a tenant created on a running owner', () => {
  it('is put on its shard and consumed', async () => {
    const dir = tempDir();
    await seedShardDir(dir, []);
    const n = await bus.owner('n', dir);
    const operator = operatorToken(Buffer.from(SHARED_MASTER_KEY, 'hex'));
    const created = await fetch(`${n.url}/v1/operator/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: 'nova', workspaces: ['w1'] }),
    });
    expect(created.status).toBe(201);
    const { tenant_token } = (await created.json()) as { tenant_token: { token: string } };
    const typed = await fetch(`${n.url}/v1/tenants/nova/event-types/page_viewed`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${tenant_token.token}`,
        'content-type': 'application/json',
      },
      body: '{}',
    });
    expect(typed.status).toBeLessThan(300);
    const ids = await publishMany(bus.collector, 'nova', 40);
    await expect
      .poll(async () => (await (await ShardMap.open(bus.admin)).get('nova'))?.assignment.shard, {
        timeout: 20_000,
      })
      .toBe('n');
    await waitDrained(bus.admin, ['nova']);
    // A quarantined event put back by `cds ingest quarantine retry` returns as a landing file,
    // which the owner ingests beside the stream.
    const retried = envelope({
      id: 'nova-retried',
      tenant: 'nova',
      workspace: 'w1',
      identifiers: { email: 'retried@shop.test' },
    });
    const partition = join(
      dir,
      'landing',
      'tenant=nova',
      'workspace=w1',
      'date=2026-03-01',
      'hour=10',
    );
    await mkdir(partition, { recursive: true });
    await writeFile(
      join(partition, 'retried.ndjson'),
      `${landingLineText(new Date().toISOString(), 'server', 'test-collector', retried as never)}\n`,
    );
    await expect
      .poll(() => existsSync(join(partition, 'retried.ndjson')), { timeout: 20_000 })
      .toBe(false);
    await n.stop();
    expect(exactlyOnce(await shardRows(dir), 'nova', [...ids, 'nova-retried'])).toEqual({
      missing: [],
      doubled: [],
      extra: 0,
    });
  }, 120_000);
});

describe('the owner loop across crashes (in process, on the cluster)', () => {
  it('takes turns among its tenants when their fetches would hold more than a batch takes', async () => {
    const dir = tempDir();
    const tenants = ['turn-1', 'turn-2', 'turn-3'];
    await seedShardDir(dir, tenants);
    const env = await openTestEnvIn(dir, { config: { master_key: SHARED_MASTER_KEY } });
    try {
      const published = new Map<string, string[]>();
      for (const tenant of tenants)
        published.set(tenant, await publishMany(bus.collector, tenant, 40));
      // One fetch fills a batch: each round fetches from one tenant, in turn.
      const loop = new StreamLoop(env.context, await bus.cluster.connect('owner'), {
        intervalMs: 1000,
        maxBatchEvents: MAX_ACK_PENDING,
      });
      await loop.take(tenants);
      loop.start();
      await waitDrained(bus.admin, tenants);
      await loop.stop();
      for (const tenant of tenants) {
        const stored = await storedIds(env.context, tenant);
        expect([...stored.keys()].sort(), tenant).toEqual(
          [...(published.get(tenant) ?? [])].sort(),
        );
      }
    } finally {
      await env.close({ keepDir: true });
    }
  }, 120_000);

  it('ingests what a failed fetch returned, then goes on right after it', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['halt']);
    const env = await openTestEnvIn(dir, { config: { master_key: SHARED_MASTER_KEY } });
    try {
      const published = await publishMany(bus.collector, 'halt', 300);
      const { bus: failing, state } = failingFirstFetch(await bus.cluster.connect('owner'), 100);
      const loop = new StreamLoop(env.context, failing, {
        intervalMs: 1000,
        maxBatchEvents: 10_000,
      });
      await loop.take(['halt']);
      loop.start();
      await expect.poll(() => state.failed).toBe(true);
      await waitDrained(bus.admin, ['halt']);
      await loop.stop();
      const stored = await storedIds(env.context, 'halt');
      expect([...stored.values()].every((n) => n === 1)).toBe(true);
      expect([...stored.keys()].sort()).toEqual([...published].sort());
      // The 100 it returned were committed; the consumer was re-created right after them, so
      // the rest came at once rather than after their ack wait.
      const info = await (await bus.admin.manager()).consumers.info(
        EVENTS_STREAM,
        durableName('halt'),
      );
      expect(info.config.opt_start_seq).toBe(state.lastReturned + 1);
    } finally {
      await env.close({ keepDir: true });
    }
  }, 120_000);

  it('skips a batch committed but not acked, and ingests once one fetched but not committed', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['crash']);
    const env = await openTestEnvIn(dir, { config: { master_key: SHARED_MASTER_KEY } });
    const jsm = await bus.admin.manager();
    try {
      // Crash after the commit, before the acks.
      const committed = await publishMany(bus.collector, 'crash', 50);
      const first = await bus.cluster.connect('owner');
      await ensureConsumers(first, new Map([['crash', null]]), MAX_ACK_PENDING);
      const fetched = await fetchNow(first, 'crash');
      expect(fetched).toHaveLength(50);
      await ingestBatch(env.context, streamSource(env.context), fetched.flatMap(busEventsOf));
      await first.close();
      const lastCommitted = Math.max(...fetched.map((message) => message.seq));

      // Crash before the commit: fetched, never ingested.
      const second = await bus.cluster.connect('owner');
      const lost = await publishMany(bus.collector, 'crash', 30);
      await ensureConsumers(second, new Map([['crash', lastCommitted]]), MAX_ACK_PENDING);
      expect((await fetchNow(second, 'crash')).length).toBeGreaterThan(0);
      await second.close();
      const later = await publishMany(bus.collector, 'crash', 20);

      const loop = new StreamLoop(env.context, await bus.cluster.connect('owner'), {
        intervalMs: 1000,
        maxBatchEvents: 10_000,
      });
      await loop.take(['crash']);
      // The restart rule re-created it right after the database, with nothing in flight.
      const info = await jsm.consumers.info(EVENTS_STREAM, durableName('crash'));
      expect(info.num_ack_pending).toBe(0);
      expect(info.config.opt_start_seq).toBe(lastCommitted + 1);
      loop.start();
      await waitDrained(bus.admin, ['crash']);
      await loop.stop();
      const stored = await storedIds(env.context, 'crash');
      expect([...stored.values()].every((n) => n === 1)).toBe(true);
      expect([...stored.keys()].sort()).toEqual([...committed, ...lost, ...later].sort());
    } finally {
      await env.close({ keepDir: true });
    }
  }, 120_000);

  it('re-creates a consumer with another max_ack_pending, or acked past the database', async () => {
    const { jetstream } = natsPackages();
    const jsm = await bus.admin.manager();
    await jsm.consumers.add(EVENTS_STREAM, {
      durable_name: durableName('wide'),
      filter_subject: tenantFilter('wide'),
      ack_policy: jetstream.AckPolicy.Explicit,
      max_ack_pending: MAX_ACK_PENDING + 1,
    });
    const owner = await bus.cluster.connect('owner');
    const verdicts = await ensureConsumers(owner, new Map([['wide', null]]), MAX_ACK_PENDING);
    expect(verdicts.get('wide')).toBe('config');
    const info = await jsm.consumers.info(EVENTS_STREAM, durableName('wide'));
    expect(info.config.max_ack_pending).toBe(MAX_ACK_PENDING);
    // Found right, it is kept.
    expect(
      (await ensureConsumers(owner, new Map([['wide', null]]), MAX_ACK_PENDING)).get('wide'),
    ).toBe('kept');
    // Acked past what the database holds (a restored backup): started again after the database.
    await publishMany(bus.collector, 'wide', 5);
    const acked = await fetchNow(owner, 'wide');
    for (const message of acked) await message.ackAck();
    const lastSeq = Math.max(...acked.map((message) => message.seq));
    expect(
      (await ensureConsumers(owner, new Map([['wide', lastSeq]]), MAX_ACK_PENDING)).get('wide'),
    ).toBe('kept');
    expect(
      (await ensureConsumers(owner, new Map([['wide', lastSeq - 2]]), MAX_ACK_PENDING)).get('wide'),
    ).toBe('ahead_of_database');
    expect((await fetchNow(owner, 'wide')).map((message) => message.seq)).toEqual(
      acked.slice(-2).map((message) => message.seq),
    );
  });
  it('judges a consumer again when its name is taken between the delete and the add', async () => {
    const admin = await bus.admin.manager();
    const owner = await bus.cluster.connect('owner');
    const real = await owner.manager();
    // Another consumer of that name comes between the restart rule's delete and its add.
    let taken = 0;
    const consumers = new Proxy(real.consumers, {
      get(target, property) {
        if (property === 'add')
          return async (stream: string, config: Parameters<typeof target.add>[1]) => {
            if (taken++ === 0)
              await admin.consumers.add(stream, {
                ...config,
                // A start the add cannot change in place, so the server refuses the name.
                deliver_policy: natsPackages().jetstream.DeliverPolicy.New,
                max_ack_pending: MAX_ACK_PENDING + 2,
              });
            return target.add(stream, config);
          };
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const manager = new Proxy(real, {
      get(target, property) {
        if (property === 'consumers') return consumers;
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const racing: BusConnection = { ...owner, manager: async () => manager };
    const verdicts = await ensureConsumers(racing, new Map([['racer', null]]), MAX_ACK_PENDING);
    // Missing at first; the add met the other consumer, so it was judged again: other settings.
    expect(taken).toBe(2);
    expect(verdicts.get('racer')).toBe('config');
    const info = await admin.consumers.info(EVENTS_STREAM, durableName('racer'));
    expect(info.config.max_ack_pending).toBe(MAX_ACK_PENDING);
  });
});

describe('an erasure on the owner (issue 30, One API any node)', () => {
  it('holds against events of the erased person still in the stream', async () => {
    const dir = tempDir();
    await seedShardDir(dir, []);
    const e = await bus.owner('e', dir);
    const operator = operatorToken(Buffer.from(SHARED_MASTER_KEY, 'hex'));
    const api = (method: string, path: string, token: string, body?: unknown) =>
      fetch(`${e.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const created = await api('POST', '/v1/operator/tenants', operator, {
      tenant_id: 'eris',
      workspaces: ['w1'],
    });
    expect(created.status).toBe(201);
    const tenantToken = ((await created.json()) as { tenant_token: { token: string } }).tenant_token
      .token;
    expect(
      (await api('PUT', '/v1/tenants/eris/event-types/page_viewed', tenantToken, {})).status,
    ).toBeLessThan(300);
    await expect
      .poll(async () => (await (await ShardMap.open(bus.admin)).get('eris'))?.assignment.shard, {
        timeout: 20_000,
      })
      .toBe('e');

    await publishEvent(bus.collector, 'eris', 'before-erasure');
    await waitDrained(bus.admin, ['eris']);
    const email = encodeURIComponent('before-erasure@shop.test');
    const found = await api(
      'GET',
      `/v1/tenants/eris/workspaces/w1/profiles/lookup?email=${email}`,
      tenantToken,
    );
    expect(found.status).toBe(200);
    const { profile_id } = (await found.json()) as { profile_id: string };
    const receivedBefore = new Date().toISOString();
    const erased = await api(
      'DELETE',
      `/v1/tenants/eris/workspaces/w1/profiles/${profile_id}`,
      tenantToken,
    );
    expect(erased.status).toBe(200);

    // Accepted by a collector before the erasure, reaching the owner after it: the same person.
    const inFlight = envelope({
      id: 'in-flight',
      tenant: 'eris',
      workspace: 'w1',
      identifiers: { email: 'before-erasure@shop.test' },
    });
    await publishEvent(
      bus.collector,
      'eris',
      'in-flight',
      landingLineText(receivedBefore, 'server', 'test-collector', inFlight as never),
    );
    await waitDrained(bus.admin, ['eris']);
    const lookedUp = await api(
      'GET',
      `/v1/tenants/eris/workspaces/w1/profiles/lookup?email=${email}`,
      tenantToken,
    );
    expect(lookedUp.status).toBe(404);
    await e.stop();
    const stored = (await shardRows(dir)).events.get('eris') ?? new Map();
    expect([...stored.keys()]).toEqual([]);
  }, 120_000);
});

/** Event id → its stored `properties.n`, for one tenant. */
async function storedN(context: Context, tenant: string): Promise<Map<string, number>> {
  const rows = await context.store.read((session) =>
    session.allText<{ event_id: string; n: string }>(
      "SELECT event_id, properties->>'n' AS n FROM events WHERE tenant_id = $tenant",
      { tenant },
    ),
  );
  return new Map(rows.map((row) => [row.event_id, Number(row.n)]));
}

/** A server event of `tenant`'s workspace w1 as a collector accepts it, `properties.n` set. */
function chunkLine(tenant: string, id: string, n: number, identifiers?: unknown): LandingLine {
  const event = envelope({ id, tenant, workspace: 'w1', properties: { n } }) as Envelope & {
    properties: Record<string, unknown>;
  };
  event.properties.identifiers = identifiers ?? { email: `${id}@shop.test` };
  const receivedAt = new Date().toISOString();
  return {
    tenantId: tenant,
    workspaceId: 'w1',
    receivedAt,
    eventId: id,
    text: landingLineText(receivedAt, 'server', 'test-collector', event),
  };
}

/** Publishes a request's lines as a collector does; the stream's acks, in order. */
async function publishRequest(connection: BusConnection, lines: LandingLine[]) {
  return Promise.all(
    busMessagesOf(lines).map((message) =>
      connection.js.publish(message.subject, message.data, { msgID: message.msgID }),
    ),
  );
}

/** Runs an owner loop over `tenants` until their consumers are drained, then stops it. */
async function drainWithLoop(context: Context, tenants: string[]): Promise<void> {
  const loop = new StreamLoop(context, await bus.cluster.connect('owner'), {
    intervalMs: 1000,
    maxBatchEvents: 10_000,
  });
  await loop.take(tenants);
  loop.start();
  await waitDrained(bus.admin, tenants);
  await loop.stop();
}

describe('a request chunk in the stream (issue 37, item 5)', () => {
  it('arrives as one message and is ingested in the order the request had its events; a chunk published again is dropped', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['chunky']);
    const env = await openTestEnvIn(dir, { config: { master_key: SHARED_MASTER_KEY } });
    try {
      // The same event id twice in one request: the first one seen is the one kept.
      const lines = [
        chunkLine('chunky', 'c-first', 1),
        chunkLine('chunky', 'c-second', 2),
        chunkLine('chunky', 'c-first', 3),
        chunkLine('chunky', 'c-third', 4),
      ];
      const [ack, ...more] = await publishRequest(bus.collector, lines);
      expect(more).toEqual([]);
      expect(ack?.duplicate).toBe(false);
      // A retry of the request, received later by another collector: its chunk has the same id.
      const again = await publishRequest(
        bus.collector,
        lines.map((line) => chunkLine('chunky', line.eventId, 9)),
      );
      expect(again.map((copy) => [copy.duplicate, copy.seq])).toEqual([[true, ack?.seq]]);
      const jsm = await bus.admin.manager();
      await ensureConsumers(bus.admin, new Map([['chunky', null]]), MAX_ACK_PENDING);
      expect((await jsm.consumers.info(EVENTS_STREAM, durableName('chunky'))).num_pending).toBe(1);
      await drainWithLoop(env.context, ['chunky']);
      expect(Object.fromEntries(await storedN(env.context, 'chunky'))).toEqual({
        'c-first': 1,
        'c-second': 2,
        'c-third': 4,
      });
      expect((await readOffsets(env.context)).get('chunky')).toBe(ack?.seq);
    } finally {
      await env.close({ keepDir: true });
    }
  }, 120_000);

  it('costs a bad event only that event: each is quarantined on its own, the rest of its chunk stored', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['spoilt']);
    const env = await openTestEnvIn(dir, { config: { master_key: SHARED_MASTER_KEY } });
    try {
      const unopenable = 'cdsbox1.bk0000000000000000.AAAA.AAAA.AAAA';
      const lines = [
        chunkLine('spoilt', 's-1', 1),
        chunkLine('spoilt', 's-bad-1', 2, unopenable),
        chunkLine('spoilt', 's-3', 3),
        chunkLine('spoilt', 's-bad-2', 4, unopenable),
        chunkLine('spoilt', 's-5', 5),
      ];
      const [ack] = await publishRequest(bus.collector, lines);
      await drainWithLoop(env.context, ['spoilt']);
      expect([...(await storedIds(env.context, 'spoilt')).keys()].sort()).toEqual([
        's-1',
        's-3',
        's-5',
      ]);
      const quarantined = await listQuarantine(env.context.dataDir);
      const held = await Promise.all(
        quarantined.map((record) =>
          readFile(quarantinedLinesPath(env.context.dataDir, record), 'utf8'),
        ),
      );
      expect(held.map((text) => JSON.parse(text).event.id).sort()).toEqual(['s-bad-1', 's-bad-2']);
      expect(new Set(quarantined.map((record) => record.landing_path)).size).toBe(2);
      expect((await readOffsets(env.context)).get('spoilt')).toBe(ack?.seq);
    } finally {
      await env.close({ keepDir: true });
    }
  }, 120_000);

  it('keeps offsets exact across an owner restart, a chunk committed in part included', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['restart']);
    const env = await openTestEnvIn(dir, { config: { master_key: SHARED_MASTER_KEY } });
    try {
      const first = Array.from({ length: 10 }, (_, i) => chunkLine('restart', `r1-${i}`, i));
      const second = Array.from({ length: 10 }, (_, i) => chunkLine('restart', `r2-${i}`, i));
      const [firstAck] = await publishRequest(bus.collector, first);
      const [secondAck] = await publishRequest(bus.collector, second);
      // An owner commits the first chunk and four events of the second (a bisect's first part),
      // then dies before the rest and before any ack.
      const dying = await bus.cluster.connect('owner');
      await ensureConsumers(dying, new Map([['restart', null]]), MAX_ACK_PENDING);
      const fetched = await fetchNow(dying, 'restart');
      expect(fetched.map((message) => message.seq)).toEqual([firstAck?.seq, secondAck?.seq]);
      const events = fetched.flatMap(busEventsOf);
      expect(
        events.map((event) => [event.seq, event.index, event.endsMessage]).slice(8, 12),
      ).toEqual([
        [firstAck?.seq, 8, false],
        [firstAck?.seq, 9, true],
        [secondAck?.seq, 0, false],
        [secondAck?.seq, 1, false],
      ]);
      await ingestBatch(env.context, streamSource(env.context), events.slice(0, 14));
      await dying.close();
      // The second chunk is not in whole: the offset stays at the first.
      expect((await readOffsets(env.context)).get('restart')).toBe(firstAck?.seq);

      const third = Array.from({ length: 10 }, (_, i) => chunkLine('restart', `r3-${i}`, i));
      const [thirdAck] = await publishRequest(bus.collector, third);
      // The restart rule starts the consumer right after the first chunk: the second comes
      // whole, its four events already in are dropped as duplicates.
      await drainWithLoop(env.context, ['restart']);
      const stored = await storedIds(env.context, 'restart');
      expect([...stored.values()].every((n) => n === 1)).toBe(true);
      expect([...stored.keys()].sort()).toEqual(
        [...first, ...second, ...third].map((line) => line.eventId).sort(),
      );
      expect((await readOffsets(env.context)).get('restart')).toBe(thirdAck?.seq);
      const info = await (await bus.admin.manager()).consumers.info(
        EVENTS_STREAM,
        durableName('restart'),
      );
      expect(info.config.opt_start_seq).toBe((firstAck?.seq ?? 0) + 1);

      // Restarted again with nothing new: kept as it is, and nothing ingested twice.
      await drainWithLoop(env.context, ['restart']);
      expect((await readOffsets(env.context)).get('restart')).toBe(thirdAck?.seq);
      expect(
        (
          await ensureConsumers(
            bus.admin,
            new Map([['restart', thirdAck?.seq ?? 0]]),
            MAX_ACK_PENDING,
          )
        ).get('restart'),
      ).toBe('kept');
    } finally {
      await env.close({ keepDir: true });
    }
  }, 120_000);
});

describe('an owner’s pull request', () => {
  it('ends at its count or its bytes, at once, with both asked; on a closed connection it ends failed', async () => {
    const chunks = [0, 1, 2, 3].map((n) =>
      Array.from({ length: 20 }, (_, i) => chunkLine('puller', `p${n}-${i}`, i)),
    );
    const acks = [];
    for (const lines of chunks) acks.push(...(await publishRequest(bus.collector, lines)));
    const owner = await bus.cluster.connect('owner');
    await ensureConsumers(owner, new Map([['puller', null]]), MAX_ACK_PENDING);
    const durable = durableName('puller');
    let started = performance.now();
    const counted = await pull(owner, durable, { batch: 2, maxBytes: 1 << 20, expiresMs: 10_000 });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(counted.failure).toBeNull();
    expect(counted.messages.map((message) => message.seq)).toEqual(
      acks.slice(0, 2).map((ack) => ack.seq),
    );
    // Room for one message and a half: the next one does not fit, and the server ends the pull.
    started = performance.now();
    const sized = await pull(owner, durable, {
      batch: 100,
      maxBytes: Math.round((counted.messages[0]?.data.length ?? 0) * 1.5),
      expiresMs: 10_000,
    });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(sized.failure).toBeNull();
    expect(sized.messages.map((message) => message.seq)).toEqual([acks[2]?.seq]);
    expect(busEventsOf(sized.messages[0] as PulledMessage).map((event) => event.index)).toEqual(
      chunks[2]?.map((_, index) => index),
    );
    await owner.close();
    const closed = await pull(owner, durable, { batch: 1, maxBytes: 1024, expiresMs: 1000 });
    expect(closed.messages).toEqual([]);
    expect(closed.failure).toBeInstanceOf(Error);
  }, 60_000);
});
