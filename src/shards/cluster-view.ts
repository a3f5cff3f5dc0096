import type { BucketWatch } from '../bus/bucket-watch.js';
import type { BusConnection } from '../bus/connect.js';
import { Owners } from './owners.js';
import { type ShardAssignment, type ShardEntry, ShardMap } from './shard-map.js';

/**
 * What an owner knows of the cluster to answer any control-plane request: its own shard, where
 * every tenant lives (the shard map, watched into memory so a request costs no bucket read) and
 * the URL each shard's owner answers on.
 */
export interface ClusterView {
  /** The shard this process owns. */
  readonly shard: string;
  /** Where a tenant nobody assigned yet is created. */
  readonly defaultShard: string;
  readonly map: ShardMap;
  readonly owners: Owners;
  /** Where `tenantId` lives as last seen, or null if the map does not name it. */
  placement(tenantId: string): ShardAssignment | null;
  /**
   * The shards other than this one that the map puts a tenant on (or moves one to): the owners a
   * question about every tenant must ask. An owner announced once for a shard that holds nothing
   * (retired, or a test) is not among them.
   */
  otherShards(): string[];
  /**
   * Takes an entry this process wrote itself (an `assign`) before its watch delivers it, so a
   * request that follows at once is routed by it; an older revision never replaces a newer one.
   */
  remember(entry: ShardEntry): void;
  stop(): void;
}

export interface ClusterViewOptions {
  shard: string;
  /** Unset: the shard of this process. */
  defaultShard?: string | undefined;
}

export async function openClusterView(
  bus: BusConnection,
  options: ClusterViewOptions,
): Promise<ClusterView> {
  const map = await ShardMap.open(bus);
  const owners = await Owners.open(bus);
  const entries = new Map<string, ShardEntry>();
  const remember = (entry: ShardEntry) => {
    const known = entries.get(entry.tenantId);
    if (!known || known.revision < entry.revision) entries.set(entry.tenantId, entry);
  };
  let watch: BucketWatch;
  try {
    watch = await map.watch((tenantId, entry) => {
      if (entry) remember(entry);
      else entries.delete(tenantId);
    });
    await watch.loaded;
  } catch (error) {
    owners.stop();
    throw error;
  }
  return {
    shard: options.shard,
    defaultShard: options.defaultShard ?? options.shard,
    map,
    owners,
    placement: (tenantId) => entries.get(tenantId)?.assignment ?? null,
    otherShards() {
      const shards = new Set<string>();
      for (const { assignment } of entries.values()) {
        shards.add(assignment.shard);
        if (assignment.to !== undefined) shards.add(assignment.to);
      }
      shards.delete(options.shard);
      return [...shards].sort();
    },
    remember,
    stop() {
      watch.stop();
      owners.stop();
    },
  };
}
