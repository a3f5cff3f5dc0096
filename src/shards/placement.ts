import { ConflictError, OwnerUnavailableError } from '../errors.js';
import type { ClusterView } from './cluster-view.js';
import type { ShardEntry } from './shard-map.js';

/**
 * Where a tenant about to be created lives: its entry in the shard map, read from the bucket (a
 * create is rare, and a watch a moment late must not put it on two shards), else a new entry on
 * the default shard. `assign` is create-only, so when two owners place the same tenant at once,
 * one wins and the other reads the winner's entry.
 */
export async function placeTenant(cluster: ClusterView, tenantId: string): Promise<ShardEntry> {
  const existing = await cluster.map.get(tenantId);
  if (existing) return existing;
  try {
    const assigned = await cluster.map.assign(tenantId, cluster.defaultShard);
    cluster.remember(assigned);
    return assigned;
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
  const winner = await cluster.map.get(tenantId);
  // Assigned by another owner and deleted again between the two reads: nothing to route to.
  if (!winner)
    throw new OwnerUnavailableError(cluster.defaultShard, 'its placement changed meanwhile');
  cluster.remember(winner);
  return winner;
}
