import type { KV } from '@nats-io/kv';
import { z } from 'zod';
import { type BucketWatch, watchBucket } from '../bus/bucket-watch.js';
import type { BusConnection } from '../bus/connect.js';
import { BUCKETS } from '../bus/setup.js';
import { tenantKey, tenantOfKey } from '../bus/subjects.js';
import { ConflictError } from '../errors.js';

/**
 * Where a tenant lives (bucket `cds_shards`, key `tenant.<T>`).
 * - `active`: `shard` owns it and consumes its events.
 * - `moving`: `cds shards move` asked `shard` to hand it to `to`; `shard` stops consuming it.
 * - `copied`: `shard` stopped at stream sequence `seq` and its rows are ready for `to`.
 * Every change is a compare-and-set on the key's revision, and `epoch` grows with each one, so two
 * writers never both win.
 */
export const shardAssignmentSchema = z.object({
  shard: z.string(),
  state: z.enum(['active', 'moving', 'copied']),
  to: z.string().optional(),
  seq: z.number().int().nonnegative().optional(),
  epoch: z.number().int().nonnegative(),
});
export type ShardAssignment = z.infer<typeof shardAssignmentSchema>;

export interface ShardEntry {
  tenantId: string;
  assignment: ShardAssignment;
  /** The key's revision: what a compare-and-set names. */
  revision: number;
}

const WRONG_REVISION = /wrong last sequence|key exists/i;

/** The shard map of a cluster: one key per tenant, read, changed by compare-and-set, watched. */
export class ShardMap {
  private constructor(private readonly kv: KV) {}

  static async open(bus: BusConnection): Promise<ShardMap> {
    return new ShardMap(await bus.kvm.open(BUCKETS.shards));
  }

  async get(tenantId: string): Promise<ShardEntry | null> {
    const entry = await this.kv.get(tenantKey(tenantId));
    if (entry?.operation !== 'PUT') return null;
    return {
      tenantId,
      assignment: shardAssignmentSchema.parse(entry.json()),
      revision: entry.revision,
    };
  }

  /** Every assigned tenant. */
  async list(): Promise<ShardEntry[]> {
    const keys: string[] = [];
    for await (const key of await this.kv.keys('tenant.>')) keys.push(key);
    const entries = await Promise.all(keys.map((key) => this.get(tenantOfKey(key))));
    return entries
      .filter((entry): entry is ShardEntry => entry !== null)
      .sort((a, b) => (a.tenantId < b.tenantId ? -1 : a.tenantId > b.tenantId ? 1 : 0));
  }

  /**
   * Puts an unassigned tenant on `shard`; a tenant already assigned is refused with 409 naming
   * its shard (a move is `cds shards move`).
   */
  async assign(tenantId: string, shard: string): Promise<ShardEntry> {
    const assignment: ShardAssignment = { shard, state: 'active', epoch: 1 };
    try {
      const revision = await this.kv.create(tenantKey(tenantId), JSON.stringify(assignment));
      return { tenantId, assignment, revision };
    } catch (error) {
      if (!WRONG_REVISION.test((error as Error).message)) throw error;
      const current = await this.get(tenantId);
      throw new ConflictError(
        `tenant ${tenantId} is already on shard ${current?.assignment.shard ?? '(being deleted)'}; move it with cds shards move`,
      );
    }
  }

  /**
   * Replaces `entry` by `next` (epoch + 1) if nobody changed it since it was read; otherwise 409,
   * and the caller reads it again.
   */
  async change(entry: ShardEntry, next: Omit<ShardAssignment, 'epoch'>): Promise<ShardEntry> {
    const assignment: ShardAssignment = { ...next, epoch: entry.assignment.epoch + 1 };
    try {
      const revision = await this.kv.update(
        tenantKey(entry.tenantId),
        JSON.stringify(assignment),
        entry.revision,
      );
      return { tenantId: entry.tenantId, assignment, revision };
    } catch (error) {
      if (!WRONG_REVISION.test((error as Error).message)) throw error;
      throw new ConflictError(
        `the shard map entry of tenant ${entry.tenantId} changed meanwhile; read it again`,
      );
    }
  }

  /** Every entry now, then every change, in order per tenant; `null` when a tenant's key is deleted. */
  watch(onChange: (tenantId: string, entry: ShardEntry | null) => void): Promise<BucketWatch> {
    return watchBucket(this.kv, 'tenant.>', (change) => {
      const tenantId = tenantOfKey(change.key);
      if (change.deleted) onChange(tenantId, null);
      else
        onChange(tenantId, {
          tenantId,
          assignment: shardAssignmentSchema.parse(change.entry.json()),
          revision: change.revision,
        });
    });
  }
}
