import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Owners } from '../../src/shards/owners.js';
import { ShardMap } from '../../src/shards/shard-map.js';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { startTestCluster, type TestCluster } from '../helpers/nats-cluster.js';
import { tempDir } from '../helpers/temp-dirs.js';

let cluster: TestCluster;
let map: ShardMap;
let owners: Owners;
let bus: string[];
const dataDir = tempDir();

beforeAll(async () => {
  cluster = await startTestCluster();
  const owner = await cluster.connect('owner');
  map = await ShardMap.open(owner);
  owners = await Owners.open(owner);
  for (const shard of ['a', 'b'])
    await owners.announce(shard, {
      url: `http://127.0.0.1:80${shard === 'a' ? '01' : '02'}`,
      pid: 1,
      started_at: '2026-11-26T08:00:00.000Z',
    });
  bus = cluster.flags('admin');
}, 60_000);

afterAll(async () => {
  owners?.stop();
  await cluster?.close();
});

/** The entry of `tenantId` once it is in `state` (what the owners would see). */
async function waitForState(tenantId: string, state: string) {
  for (;;) {
    const entry = await map.get(tenantId);
    if (entry?.assignment.state === state) return entry;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** How many watches the shard map's bucket serves now (each is a consumer of its stream). */
/**
 * Resolves once the next watch of the shard map in this process is up (its consumer made): the
 * command runs in this process, so this is its own watch, not another watcher's consumer.
 */
function nextMapWatch(): Promise<void> {
  const original = ShardMap.prototype.watch;
  return new Promise((resolve) => {
    const spy = vi.spyOn(ShardMap.prototype, 'watch').mockImplementation(async function (
      this: ShardMap,
      onChange,
    ) {
      spy.mockRestore();
      const watch = await original.call(this, onChange);
      resolve();
      return watch;
    });
  });
}

function cds(...args: string[]) {
  return cdsInProcess(['-d', dataDir, 'shards', ...args, ...bus]);
}

describe('cds shards', () => {
  it('assigns an unplaced tenant, and refuses a placed one, pointing at move', async () => {
    const assigned = await cds('assign', 'acme', 'a');
    expect(assigned).toMatchObject({ code: 0, stdout: 'Assigned tenant acme to shard a\n' });
    const json = await cdsInProcess([
      '-d',
      dataDir,
      '--json',
      'shards',
      'assign',
      'globex',
      'b',
      ...bus,
    ]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      tenant_id: 'globex',
      shard: 'b',
      state: 'active',
      epoch: 1,
    });
    const again = await cds('assign', 'acme', 'b');
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      'tenant acme is already on shard a; move it with cds shards move',
    );
    const badShard = await cds('assign', 'initech', 'Not.A.Shard');
    expect(badShard.code).toBe(1);
    expect(badShard.stderr).toContain('SHARD: must be 1-64 of a-z, 0-9, _ and -');
    expect(await map.get('initech')).toBeNull();
  });

  it('lists every tenant with its shard and state, and every shard owner', async () => {
    const table = await cds('list');
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(
      /TENANT_ID\s+SHARD\s+STATE\s+TO\s+EPOCH\nacme\s+a\s+active\s+-\s+1\nglobex\s+b\s+active/,
    );
    expect(table.stdout).toMatch(/SHARD\s+URL\s+PID\s+STARTED_AT\na\s+http:\/\/127\.0\.0\.1:8001/);
    const json = await cdsInProcess(['-d', dataDir, '--json', 'shards', 'list', ...bus]);
    const listed = JSON.parse(json.stdout);
    expect(listed.tenants).toEqual([
      { tenant_id: 'acme', shard: 'a', state: 'active', to: null, seq: null, epoch: 1 },
      { tenant_id: 'globex', shard: 'b', state: 'active', to: null, seq: null, epoch: 1 },
    ]);
    expect(listed.shards.map((s: { shard: string }) => s.shard)).toEqual(['a', 'b']);
  });

  it('works with an owner’s credentials too, and refuses without the bus', async () => {
    const asOwner = await cdsInProcess([
      '-d',
      dataDir,
      'shards',
      'list',
      ...cluster.flags('owner'),
      '--bus-role',
      'owner',
    ]);
    expect(asOwner.code).toBe(0);
    const noBus = await cdsInProcess(['-d', dataDir, 'shards', 'list'], { CDS_BUS: '' });
    expect(noBus.code).toBe(2);
    expect(noBus.stderr).toContain('--bus');
  });

  it('refuses a move to the same shard, of an unknown tenant, or to a shard without an owner', async () => {
    const same = await cds('move', 'acme', 'a');
    expect(same.code).toBe(1);
    expect(same.stderr).toContain('tenant acme is already on shard a');
    const unknown = await cds('move', 'nobody', 'b');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('tenant nobody is not in the shard map');
    const ownerless = await cds('move', 'acme', 'z');
    expect(ownerless.code).toBe(1);
    expect(ownerless.stderr).toContain('no owner has announced itself for shard z');
    expect((await map.get('acme'))?.assignment).toEqual({ shard: 'a', state: 'active', epoch: 1 });
  });

  it('moves a tenant and waits, saying each state, until it is active on the new shard', async () => {
    const watching = nextMapWatch();
    const running = cds('move', 'acme', 'b', '--timeout', '30');
    // The owners' side, by hand: the shard it leaves marks it copied, the target takes it.
    const entry = await waitForState('acme', 'moving');
    expect(entry.assignment).toEqual({ shard: 'a', state: 'moving', to: 'b', epoch: 2 });
    // Once the command watches the map it sees every later state; a state changed before its
    // watch is up may be skipped, as awaitMove says.
    await watching;
    const copied = await map.change(entry, { shard: 'a', state: 'copied', to: 'b', seq: 42 });
    await map.change(copied, { shard: 'b', state: 'active' });
    const moved = await running;
    expect(moved.code).toBe(0);
    expect(moved.stdout).toBe(
      [
        'acme: moving from shard a to shard b',
        'acme: copied from shard a to shard b up to stream sequence 42',
        'acme: active on shard b',
        '',
      ].join('\n'),
    );
    const entryNow = await map.get('acme');
    expect(entryNow?.assignment).toEqual({ shard: 'b', state: 'active', epoch: 4 });
  });

  it('gives up waiting after --timeout, saying where the move stands, and --json says the states', async () => {
    const waited = await cds('move', 'globex', 'a', '--timeout', '0.5');
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain(
      'tenant globex is not active on shard a yet (it is moving from shard b to shard a)',
    );
    const stuck = await map.get('globex');
    if (!stuck) throw new Error('globex is gone');
    const refused = await cds('move', 'globex', 'a');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('already moving from shard b to shard a');
    // The owners give the move up: globex is active again where it was.
    await map.change(stuck, { shard: 'b', state: 'active' });
    const running = cdsInProcess([
      '-d',
      dataDir,
      '--json',
      'shards',
      'move',
      'globex',
      'a',
      '--timeout',
      '30',
      ...bus,
    ]);
    const moving = await waitForState('globex', 'moving');
    await map.change(moving, { shard: 'a', state: 'active' });
    const json = await running;
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({
      tenant_id: 'globex',
      shard: 'a',
      state: 'active',
      epoch: 5,
      states: ['globex: moving from shard b to shard a', 'globex: active on shard a'],
    });
  });

  it('says so when the owners give a move up', async () => {
    const running = cds('move', 'globex', 'b', '--timeout', '30');
    const moving = await waitForState('globex', 'moving');
    await map.change(moving, { shard: 'a', state: 'active' });
    const given = await running;
    expect(given.code).toBe(1);
    expect(given.stderr).toContain(
      'the move of tenant globex to shard b was given up: it is active on shard a',
    );
  });
});
