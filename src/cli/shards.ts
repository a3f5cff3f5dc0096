import type { BusConnection, BusRole } from '../bus/connect.js';
import { loadConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import {
  awaitMove,
  checkShardName,
  describeAssignment,
  requestMove,
} from '../shards/move-request.js';
import { Owners } from '../shards/owners.js';
import { ShardMap } from '../shards/shard-map.js';
import type { GlobalOptions } from './admin-request.js';
import { type BusFlags, busConfigInput, busSettingsOf } from './bus-flags.js';
import { output, printLine, printTable } from './output.js';

export interface ShardsFlags extends BusFlags {
  /** Whose credentials `--bus-creds` holds: they decide the inbox the cluster lets it answer on. */
  busRole: Extract<BusRole, 'admin' | 'owner'>;
}

export interface ShardsMoveFlags extends ShardsFlags {
  /** Seconds to wait for the tenant to be active on its new shard. */
  timeout: number;
}

async function withShardMap<T>(
  globals: GlobalOptions,
  flags: ShardsFlags,
  work: (map: ShardMap, owners: Owners) => Promise<T>,
): Promise<T> {
  const config = loadConfig({ data_dir: globals.dataDir, ...busConfigInput(flags) });
  const settings = busSettingsOf(config);
  if (!settings) throw new ConfigError('--bus', 'is required: the NATS servers of the cluster');
  const { connectBus } = await import('../bus/connect.js');
  const bus: BusConnection = await connectBus(settings, flags.busRole);
  let owners: Owners | null = null;
  try {
    const map = await ShardMap.open(bus);
    owners = await Owners.open(bus);
    return await work(map, owners);
  } finally {
    owners?.stop();
    await bus.close();
  }
}

/** `cds shards list`: every assigned tenant with its shard and state, and every shard's owner. */
export async function runShardsList(globals: GlobalOptions, flags: ShardsFlags): Promise<void> {
  const listed = await withShardMap(globals, flags, async (map, owners) => ({
    tenants: (await map.list()).map(({ tenantId, assignment }) => ({
      tenant_id: tenantId,
      shard: assignment.shard,
      state: assignment.state,
      to: assignment.to ?? null,
      seq: assignment.seq ?? null,
      epoch: assignment.epoch,
    })),
    shards: [...owners.all()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([shard, owner]) => ({ shard, ...owner })),
  }));
  output(globals.json, listed, (value) => {
    printTable(value.tenants, ['tenant_id', 'shard', 'state', 'to', 'epoch']);
    printLine('');
    printTable(value.shards, ['shard', 'url', 'pid', 'started_at']);
  });
}

/** `cds shards assign TENANT SHARD`: places a tenant nobody placed yet. */
export async function runShardsAssign(
  globals: GlobalOptions,
  flags: ShardsFlags,
  tenantId: string,
  shard: string,
): Promise<void> {
  checkShardName(shard, 'SHARD');
  const entry = await withShardMap(globals, flags, (map) => map.assign(tenantId, shard));
  output(globals.json, { tenant_id: entry.tenantId, ...entry.assignment }, (value) =>
    printLine(`Assigned tenant ${value.tenant_id} to shard ${value.shard}`),
  );
}

/** `cds shards move TENANT SHARD`: asks the owners to move a tenant and waits until it is done. */
export async function runShardsMove(
  globals: GlobalOptions,
  flags: ShardsMoveFlags,
  tenantId: string,
  shard: string,
): Promise<void> {
  const states: string[] = [];
  const say = (line: string) => {
    states.push(line);
    if (!globals.json) printLine(line);
  };
  const done = await withShardMap(globals, flags, async (map, owners) => {
    const requested = await requestMove(map, owners, tenantId, shard);
    say(`${tenantId}: ${describeAssignment(requested.assignment)}`);
    const { default: ora } = await import('ora');
    const spinner = process.stderr.isTTY
      ? ora({
          text: `waiting for shard ${shard} to take ${tenantId}`,
          stream: process.stderr,
        }).start()
      : null;
    try {
      return await awaitMove(map, requested, shard, {
        timeoutMs: flags.timeout * 1000,
        onState: (assignment) => {
          spinner?.clear();
          say(`${tenantId}: ${describeAssignment(assignment)}`);
          spinner?.render();
        },
      });
    } finally {
      spinner?.stop();
    }
  });
  if (globals.json)
    output(true, { tenant_id: done.tenantId, ...done.assignment, states }, () => undefined);
}
