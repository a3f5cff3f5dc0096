import { copyFileSync, existsSync } from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { dedupIndexOf, FingerprintTable } from '../../src/ingest/dedup-index.js';
import { saveIndexes } from '../../src/ingest/saved-indexes.js';
import { savedIndexPath } from '../../src/store/index-files.js';
import { demoDataDir, writeBacklog } from '../helpers/backlog.js';
import { openTestEnvIn, type TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { operatorReadiness } from '../helpers/readiness.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const order = (orderId: string, email: string) =>
  envelope({ name: 'order_placed', identifiers: { email }, properties: { order_id: orderId } });

/**
 * Two order ids whose dedup keys share the dedup index's fingerprint (the low 32 bits of their
 * MD5), found the way ingest computes the hash: the index must not take one for the other.
 */
async function collidingOrderIds(prefix = 'o'): Promise<[string, string]> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const reader = await connection.runAndReadAll(
    `
    SELECT list(order_id ORDER BY order_id)[1:2] AS pair FROM (
      SELECT $prefix || i AS order_id,
        (md5_number('acme/eu/order_placed/order:' || to_json([$prefix || i])::VARCHAR) & 4294967295::UHUGEINT)::UINTEGER
          AS fingerprint
      FROM range(400000) t(i)
    ) GROUP BY fingerprint HAVING count(*) > 1 LIMIT 1`,
    { prefix },
  );
  connection.closeSync();
  const pair = reader.getRowObjectsJS()[0]?.pair as string[] | undefined;
  if (!pair) throw new Error('no two order ids share a fingerprint in the range searched');
  return [pair[0] as string, pair[1] as string];
}

describe('dedup index', () => {
  let env: TestEnv;
  let tokens: Tokens;
  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true, eventTypes: false }));
    const type = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/event-types/order_placed',
      {
        dedup_entity: 'order',
        dedup_key_paths: ['properties.order_id'],
      },
    );
    expect(type.statusCode, type.body).toBe(201);
  });
  afterEach(() => env.close());

  const storedFingerprints = () =>
    env.context.store.read((session) =>
      session.allText<{ fingerprint: number }>(
        'SELECT (dedup_hash & 4294967295::UHUGEINT)::UINTEGER AS fingerprint FROM events ORDER BY ALL',
      ),
    );

  it('stores an event whose key shares a stored key’s fingerprint, and still knows both as duplicates', async () => {
    const [first, second] = await collidingOrderIds();
    await sendServer(env, tokens.collector, [order(first, 'ada@acme.test')]);
    await env.ingest();
    await sendServer(env, tokens.collector, [order(second, 'bob@acme.test')]);
    await env.ingest();
    expect(await operatorReadiness(env)).toMatchObject({ events_ingested: 2, duplicates: 0 });
    const [a, b] = await storedFingerprints();
    expect(a?.fingerprint).toBe(b?.fingerprint);

    await sendServer(env, tokens.collector, [
      order(first, 'ada@acme.test'),
      order(second, 'bob@acme.test'),
    ]);
    await env.ingest();
    expect(await operatorReadiness(env)).toMatchObject({ events_ingested: 2, duplicates: 2 });

    // A replayed key adds nothing to the index, but a new key of the same fingerprint sent in the
    // same batch gets its own entry: both are known when they come again. Each batch is ingested
    // in a second of its own, as the index finds stored events by their ingest second.
    const ingestLater = () => {
      env.clock.advance(5_000);
      return env.ingest();
    };
    const [old, fresh] = await collidingOrderIds('p');
    await sendServer(env, tokens.collector, [order(old, 'cid@acme.test')]);
    await ingestLater();
    await sendServer(env, tokens.collector, [
      order(old, 'cid@acme.test'),
      order(fresh, 'dan@acme.test'),
    ]);
    await ingestLater();
    expect(await operatorReadiness(env)).toMatchObject({ events_ingested: 4, duplicates: 3 });
    await sendServer(env, tokens.collector, [
      order(old, 'cid@acme.test'),
      order(fresh, 'dan@acme.test'),
    ]);
    await ingestLater();
    expect(await operatorReadiness(env)).toMatchObject({ events_ingested: 4, duplicates: 5 });
  });

  it('knows stored events as duplicates after a restart, and after an erasure removed others', async () => {
    await sendServer(env, tokens.collector, [
      order('o-1', 'ada@acme.test'),
      order('o-2', 'bob@acme.test'),
    ]);
    await env.ingest();
    await env.close({ keepDir: true });
    env = await openTestEnvIn(env.dir, { collector: true });

    await sendServer(env, tokens.collector, [order('o-1', 'ada@acme.test')]);
    await env.ingest();
    expect(await operatorReadiness(env)).toMatchObject({ events_ingested: 2, duplicates: 1 });

    const lookup = await call(
      env.app,
      tokens.tenant,
      'GET',
      '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=ada@acme.test',
    );
    expect(lookup.statusCode, lookup.body).toBe(200);
    const erased = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `/v1/tenants/acme/workspaces/eu/profiles/${lookup.json().profile_id}`,
    );
    expect(erased.statusCode, erased.body).toBeLessThan(300);

    await sendServer(env, tokens.collector, [
      order('o-2', 'bob@acme.test'),
      order('o-3', 'bob@acme.test'),
    ]);
    await env.ingest();
    const counts = await env.context.store.read((session) =>
      session.allText<{ order_id: string }>(
        "SELECT properties->>'$.order_id' AS order_id FROM events ORDER BY ALL",
      ),
    );
    expect(counts.map((row) => row.order_id)).toEqual(['o-2', 'o-3']);
  });

  it('is saved for the next process, which takes it only while the events are what it was saved from', async () => {
    await sendServer(env, tokens.collector, [order('o-1', 'ada@acme.test')]);
    await env.ingest();
    await saveIndexes(env.context.store);
    const path = savedIndexPath(env.context.store, 'dedup') as string;
    expect(existsSync(path)).toBe(true);
    copyFileSync(path, `${path}.then`);

    await env.close({ keepDir: true });
    env = await openTestEnvIn(env.dir, { collector: true });
    await sendServer(env, tokens.collector, [
      order('o-1', 'ada@acme.test'),
      order('o-2', 'bob@acme.test'),
    ]);
    await env.ingest();
    expect(dedupIndexOf(env.context.store).source).toBe('saved');
    expect(await operatorReadiness(env)).toMatchObject({ events_ingested: 2, duplicates: 1 });

    // Saved before o-2 was stored: not taken, and o-2 is still known as a duplicate.
    await env.close({ keepDir: true });
    copyFileSync(`${path}.then`, path);
    env = await openTestEnvIn(env.dir, { collector: true });
    await sendServer(env, tokens.collector, [order('o-2', 'bob@acme.test')]);
    await env.ingest();
    expect(dedupIndexOf(env.context.store).source).toBe('tables');
    expect(await operatorReadiness(env)).toMatchObject({ events_ingested: 2, duplicates: 2 });
  });
});

describe('dedup index table', () => {
  it('finds a fingerprint only on the way from its own home', () => {
    const table = new FingerprintTable(10);
    expect(table.add(7, 100, 1_000)).toBe(true);
    expect(table.add(7, 9_000, 2_000)).toBe(true);
    const seconds = new Set<number>();
    expect(table.secondsOf(7, 100, seconds)).toBe(true);
    expect([...seconds]).toEqual([1_000]);
    // The same fingerprint from another home is another key: no stored event to read.
    expect(table.secondsOf(7, 5_000, new Set())).toBe(false);
    // A home past the table's size wraps to its slot; a zero fingerprint is kept as one.
    expect(table.add(0, 100 + table.capacity, 3_000)).toBe(true);
    const wrapped = new Set<number>();
    expect(table.secondsOf(0, 100, wrapped)).toBe(true);
    expect([...wrapped]).toEqual([3_000]);
  });

  it('refuses an entry once 70 % full, keeping every entry it took', () => {
    const table = new FingerprintTable(0);
    const taken = Math.floor(table.capacity * 0.7);
    for (let entry = 1; entry <= taken; entry += 1)
      expect(table.add(entry, entry * 2_654_435_761, entry)).toBe(true);
    expect(table.add(taken + 1, 1, 1)).toBe(false);
    for (const entry of [1, Math.floor(taken / 2), taken]) {
      const seconds = new Set<number>();
      expect(table.secondsOf(entry, entry * 2_654_435_761, seconds)).toBe(true);
      expect([...seconds]).toEqual([entry]);
    }
  });

  it('is built again twice as large once a batch fills it, and still knows every stored key', async () => {
    const dir = await demoDataDir();
    writeBacklog(dir, { events: 60_000, name: 'ctest-00000001', seed: 3 });
    const env = await openTestEnvIn(dir, { maxBatchEvents: 20_000 });
    try {
      await env.ingest();
      const first = await operatorReadiness(env);
      const index = dedupIndexOf(env.context.store);
      expect(first.events_ingested).toBeGreaterThan(45_000);
      // The first table (65,536 slots) took at most 45,875 keys: the batch that filled it left it
      // to be built again from the events, twice as large, by the next one.
      writeBacklog(dir, { events: 60_000, name: 'ctest-00000002', seed: 3 });
      await env.ingest();
      expect(index.capacity).toBe(131_072);
      expect(index.source).toBe('tables');
      const replayed = await operatorReadiness(env);
      expect(replayed.events_ingested).toBe(first.events_ingested);
      expect(replayed.duplicates).toBe(2 * first.duplicates + first.events_ingested);
    } finally {
      await env.close();
    }
  }, 90_000);
});
