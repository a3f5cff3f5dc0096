import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BusConnection } from '../../src/bus/connect.js';
import { ShardMap } from '../../src/shards/shard-map.js';
import {
  exactlyOnce,
  publishEvent,
  publishMany,
  seedShardDir,
  shardRows,
  startOwnerProcess,
  waitDrained,
} from '../helpers/bus-owners.js';
import type { ChildServer } from '../helpers/cli.js';
import { runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';
import { startTestCluster, type TestCluster } from '../helpers/nats-cluster.js';

let cluster: TestCluster;
let admin: BusConnection;
let collector: BusConnection;
const running: ChildServer[] = [];

beforeAll(async () => {
  cluster = await startTestCluster();
  admin = await cluster.connect('admin');
  collector = await cluster.connect('collector');
}, 60_000);

afterAll(async () => {
  await Promise.all(running.map((child) => child.stop()));
  await cluster?.close();
});

async function owner(shard: string, dir: string): Promise<ChildServer> {
  const child = await startOwnerProcess(cluster, shard, dir);
  running.push(child);
  return child;
}

describe('cds serve --bus --shard: owners consume their tenants exactly once', () => {
  it('refuses --bus without --shard', async () => {
    const result = await runCli([
      'serve',
      '--bus',
      cluster.servers.join(','),
      '--bus-creds',
      cluster.creds.owner,
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
    await seedShardDir(dirA, ['alpha', 'amber']);
    await seedShardDir(dirB, ['beta']);
    const a = await owner('a', dirA);
    const b = await owner('b', dirB);
    const map = await ShardMap.open(admin);
    // Tenants in a database the map did not know are assigned to that database's shard.
    expect((await map.list()).map((entry) => [entry.tenantId, entry.assignment.shard])).toEqual([
      ['alpha', 'a'],
      ['amber', 'a'],
      ['beta', 'b'],
    ]);

    const first = {
      alpha: await publishMany(collector, 'alpha', 600),
      amber: await publishMany(collector, 'amber', 300),
      beta: await publishMany(collector, 'beta', 600),
    };
    // SIGKILL a mid-load: its batch under way is lost or committed unacked; b goes on.
    await new Promise((resolve) => setTimeout(resolve, 400));
    a.child.kill('SIGKILL');
    const second = {
      alpha: await publishMany(collector, 'alpha', 500),
      beta: await publishMany(collector, 'beta', 500),
    };
    await waitDrained(admin, ['beta']);
    const restarted = await owner('a', dirA);
    const third = { amber: await publishMany(collector, 'amber', 200) };
    await waitDrained(admin, ['alpha', 'amber', 'beta']);
    await restarted.stop();
    await b.stop();

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
    const before = await publishMany(collector, 'gamma', 50);
    // Not JSON, and an envelope of a workspace the tenant does not have.
    await publishEvent(collector, 'gamma', 'garbage', 'this is not a landing line');
    await publishEvent(
      collector,
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
    const after = await publishMany(collector, 'gamma', 50);
    const g = await owner('g', dir);
    await waitDrained(admin, ['gamma']);
    await g.stop();
    const rows = await shardRows(dir);
    expect(exactlyOnce(rows, 'gamma', [...before, ...after])).toEqual({
      missing: [],
      doubled: [],
      extra: 0,
    });
  }, 120_000);
});
