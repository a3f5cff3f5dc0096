import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Owners } from '../../src/shards/owners.js';
import { type ShardEntry, ShardMap } from '../../src/shards/shard-map.js';
import { startTestCluster, type TestCluster } from '../helpers/nats-cluster.js';

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster();
}, 60_000);

afterAll(async () => {
  await cluster?.close();
});

describe('the shard map (cds_shards)', () => {
  it('assigns a tenant once, changes it only by compare-and-set, and tells watchers in order', async () => {
    const owner = await cluster.connect('owner');
    const map = await ShardMap.open(owner);
    const seen: (ShardEntry | null)[] = [];
    const watch = await map.watch((tenantId, entry) => {
      if (tenantId === 'acme.web') seen.push(entry);
    });
    await watch.loaded;
    const first = await map.assign('acme.web', 'a');
    await expect(map.assign('acme.web', 'b')).rejects.toThrow(/already on shard a/);
    const moving = await map.change(first, { shard: 'a', state: 'moving', to: 'b' });
    await expect(map.change(first, { shard: 'b', state: 'active' })).rejects.toThrow(
      /changed meanwhile/,
    );
    expect(moving.assignment).toEqual({ shard: 'a', state: 'moving', to: 'b', epoch: 2 });
    expect(await map.get('acme.web')).toEqual(moving);
    expect((await map.list()).map((entry) => entry.tenantId)).toEqual(['acme.web']);
    await expect.poll(() => seen.length).toBe(2);
    expect(seen.map((entry) => entry?.assignment.state)).toEqual(['active', 'moving']);
    watch.stop();
  });

  it('keeps the URL each owner announces, seen by the other owners', async () => {
    const a = await Owners.open(await cluster.connect('owner'));
    const b = await Owners.open(await cluster.connect('owner'));
    await a.announce('a', {
      url: 'http://127.0.0.1:1111',
      pid: 1,
      started_at: new Date().toISOString(),
    });
    await expect.poll(() => b.of('a')?.url).toBe('http://127.0.0.1:1111');
    expect(b.of('nobody')).toBeNull();
    a.stop();
    b.stop();
  });

  it('refuses a collector that writes the shard map', async () => {
    const collector = await cluster.connect('collector');
    const kv = await collector.kvm.open('cds_shards');
    await expect(kv.put('tenant.acme', '{}')).rejects.toThrow(/Permissions Violation/);
  });
});
