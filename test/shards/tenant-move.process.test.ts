import { describe, expect, it } from 'vitest';
import { durableName, EVENTS_STREAM } from '../../src/bus/subjects.js';
import { type ShardAssignment, ShardMap } from '../../src/shards/shard-map.js';
import { parseMasterKey } from '../../src/store/data-dir.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import {
  exactlyOnce,
  publishMany,
  SHARED_MASTER_KEY,
  seedShardDir,
  shardRows,
  useOwnerCluster,
  waitDrained,
} from '../helpers/bus-owners.js';
import { tempDir } from '../helpers/temp-dirs.js';

const bus = useOwnerCluster();

/**
 * Reads a live stream to its end, keeping its last bytes (the lines before are the tenant's
 * events); answers when it ended and those bytes.
 */
async function readToEnd(url: string, token: string, signal: AbortSignal) {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
    signal,
  });
  if (response.status !== 200) throw new Error(`the stream answered ${response.status}`);
  const decoder = new TextDecoder();
  let tail = '';
  for await (const chunk of response.body as ReadableStream<Uint8Array>) {
    tail = (tail + decoder.decode(chunk, { stream: true })).slice(-4096);
  }
  return { endedAt: performance.now(), tail };
}

describe('moving a tenant between shards under load', () => {
  it('copies its rows to the new shard and goes on from the sequence it copied: nothing lost, doubled or left behind; a stream held on the old shard ends', async ({
    annotate,
  }) => {
    const dirA = tempDir();
    const dirB = tempDir();
    await Promise.all([seedShardDir(dirA, ['tau', 'ursa']), seedShardDir(dirB, ['vega'])]);
    const [a, b] = await Promise.all([bus.owner('a', dirA), bus.owner('b', dirB)]);
    const map = await ShardMap.open(bus.admin);
    const seen: ShardAssignment[] = [];
    let switchedAt = Number.NaN;
    const watch = await map.watch((tenantId, entry) => {
      if (tenantId !== 'tau' || !entry) return;
      seen.push(entry.assignment);
      if (entry.assignment.shard === 'b') switchedAt = performance.now();
    });

    // Events of tau keep flowing through the whole move.
    const published: string[] = [];
    let flowing = true;
    let round = 0;
    const load = (async () => {
      while (flowing) {
        published.push(...(await publishMany(bus.collector, 'tau', 100, `load${round++}`)));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const ursa = await publishMany(bus.collector, 'ursa', 200);
    // A live stream of tau held open on A, which stops holding tau when the move is done.
    const stream = readToEnd(
      `${a.url}/v1/tenants/tau/workspaces/w1/events/stream`,
      operatorToken(parseMasterKey(SHARED_MASTER_KEY, 'test')),
      AbortSignal.timeout(120_000),
    );
    // A has committed some of tau's events (acks follow commits) before the move asks for them.
    // The consumer's own sequence counts tau's messages only; its stream sequence also moves
    // over other tenants' messages, acked or not.
    const jsm = await bus.admin.manager();
    await expect
      .poll(
        async () =>
          (await jsm.consumers.info(EVENTS_STREAM, durableName('tau'))).ack_floor.consumer_seq,
        { timeout: 30_000, interval: 200 },
      )
      .toBeGreaterThan(0);

    // What `cds shards move tau b` does; the owners do the rest.
    const before = await map.get('tau');
    expect(before?.assignment).toMatchObject({ shard: 'a', state: 'active' });
    await map.change(before as NonNullable<typeof before>, {
      shard: 'a',
      state: 'moving',
      to: 'b',
    });
    await expect
      .poll(async () => (await map.get('tau'))?.assignment.shard, {
        timeout: 60_000,
        interval: 200,
      })
      .toBe('b');
    await new Promise((resolve) => setTimeout(resolve, 1500));
    flowing = false;
    await load;
    await waitDrained(bus.admin, ['tau', 'ursa']);
    // A deletes its copy once it sees tau active on b, and the stream it held ends once that
    // delete has committed (the workspace is gone): its end is the wait for the delete.
    const { endedAt, tail } = await stream;
    await annotate(
      `the stream on A ended ${(endedAt - switchedAt).toFixed(0)} ms after the test's watch of the map saw tau on b`,
    );
    // A ends it when it drops its copy, right after it sees the switch.
    expect(endedAt - switchedAt).toBeLessThan(5_000);
    expect(tail).toMatch(
      /event: error\ndata: \{"error":\{"code":"not_found","message":"workspace w1 does not exist in tenant tau"\}\}\n\n$/,
    );
    await a.stop();
    await b.stop();
    watch.stop();

    expect(seen.map((entry) => entry.state)).toEqual(['active', 'moving', 'copied', 'active']);
    const copiedAt = seen[2]?.seq ?? 0;
    expect(copiedAt).toBeGreaterThan(0);
    const rowsA = await shardRows(dirA);
    const rowsB = await shardRows(dirB);
    const clean = { missing: [], doubled: [], extra: 0 };
    expect(exactlyOnce(rowsB, 'tau', published)).toEqual(clean);
    expect(rowsA.events.has('tau')).toBe(false);
    expect(rowsA.offsets.has('tau')).toBe(false);
    expect(rowsA.profiles.has('tau')).toBe(false);
    // Its other rows came along: one profile per shopper, A's and B's alike.
    expect(rowsB.profiles.get('tau')).toBe(published.length);
    // B's sequence of tau continues the one A handed over.
    expect(rowsB.offsets.get('tau')).toBeGreaterThan(copiedAt);
    // The tenant that stayed is untouched.
    expect(exactlyOnce(rowsA, 'ursa', ursa)).toEqual(clean);
    // Collectors still know tau: A dropping its copy did not delete the key B put.
    const registry = await bus.admin.kvm.open('cds_registry');
    expect((await registry.get('tenant.tau'))?.operation).toBe('PUT');
  }, 180_000);

  it('resumes from the shard map when the new owner was down during the hand-over', async () => {
    const dirA = tempDir();
    const dirB = tempDir();
    await Promise.all([seedShardDir(dirA, ['omega']), seedShardDir(dirB, [])]);
    const a = await bus.owner('c', dirA);
    const first = await publishMany(bus.collector, 'omega', 300);
    await waitDrained(bus.admin, ['omega']);
    const map = await ShardMap.open(bus.admin);
    const entry = await map.get('omega');
    await map.change(entry as NonNullable<typeof entry>, { shard: 'c', state: 'moving', to: 'd' });
    // c hands over; d is not running yet, so omega waits, copied, with its events in the stream.
    await expect
      .poll(async () => (await map.get('omega'))?.assignment.state, { timeout: 30_000 })
      .toBe('copied');
    const meanwhile = await publishMany(bus.collector, 'omega', 200);
    const d = await bus.owner('d', dirB);
    await expect
      .poll(async () => (await map.get('omega'))?.assignment, { timeout: 60_000, interval: 200 })
      .toMatchObject({ shard: 'd', state: 'active' });
    const after = await publishMany(bus.collector, 'omega', 100);
    await waitDrained(bus.admin, ['omega']);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    await a.stop();
    await d.stop();
    const rowsA = await shardRows(dirA);
    const rowsB = await shardRows(dirB);
    expect(exactlyOnce(rowsB, 'omega', [...first, ...meanwhile, ...after])).toEqual({
      missing: [],
      doubled: [],
      extra: 0,
    });
    expect(rowsA.events.has('omega')).toBe(false);
  }, 180_000);
});
