import type { KV } from '@nats-io/kv';
import { type BucketWatch, watchBucket } from '../bus/bucket-watch.js';
import { BUS_KEY_ENTRY } from '../bus/bus-key.js';
import type { BusConnection } from '../bus/connect.js';
import { type PublishPolicy, retryingOnBus } from '../bus/publisher.js';
import { BUCKETS } from '../bus/setup.js';
import { tenantKey, tenantOfKey } from '../bus/subjects.js';
import { BusUnavailableError, RegistryNotPublishedError } from '../errors.js';
import { parseTenantEntry, type Registry, type RegistrySnapshot } from './registry.js';

/**
 * The owner's side of the registry on the bus (docs/cluster-design.md §6): each tenant of this
 * database is one key of `cds_registry`, its entry of the snapshot. A publish puts the entries
 * that changed since the last one this process put (all of them the first time) and deletes the
 * keys of tenants it put that the database no longer holds; keys it never put belong to tenants
 * of other shards and are left alone. A put that failed is tried again at the next publish.
 *
 * A delete names the revision this process put: a tenant moved to another shard leaves this
 * database, and by then its new owner may have put the key again, which must stay.
 */
export class RegistryBucketWriter {
  /** The JSON this process last put, and the key's revision it made, by tenant id. */
  private readonly put = new Map<string, { text: string; revision: number }>();
  private newestVersion = -1;

  private constructor(
    private readonly kv: KV,
    private readonly policy: PublishPolicy,
  ) {}

  static async open(bus: BusConnection, policy: PublishPolicy): Promise<RegistryBucketWriter> {
    return new RegistryBucketWriter(await bus.kvm.open(BUCKETS.registry), policy);
  }

  /**
   * Resolves once every changed key is in the bucket, so a control-plane write is answered only
   * when collectors can see it; throws BusUnavailableError when the bucket did not take it within
   * the retry budget. Called in snapshot order; an older snapshot than one written is ignored.
   */
  async publish(snapshot: RegistrySnapshot): Promise<void> {
    if (snapshot.version < this.newestVersion) return;
    this.newestVersion = snapshot.version;
    const held = new Set<string>();
    const writes: Promise<void>[] = [];
    for (const tenant of snapshot.tenants) {
      held.add(tenant.tenant_id);
      const text = JSON.stringify(tenant);
      if (this.put.get(tenant.tenant_id)?.text === text) continue;
      writes.push(
        retryingOnBus(() => this.kv.put(tenantKey(tenant.tenant_id), text), this.policy).then(
          (revision) => {
            this.put.set(tenant.tenant_id, { text, revision });
          },
        ),
      );
    }
    for (const [tenantId, { revision }] of this.put) {
      if (held.has(tenantId)) continue;
      writes.push(
        retryingOnBus(() => this.deleteOwn(tenantId, revision), this.policy).then(() => {
          this.put.delete(tenantId);
        }),
      );
    }
    const outcomes = await Promise.allSettled(writes);
    const failure = outcomes.find((outcome) => outcome.status === 'rejected');
    if (!failure) return;
    const error: unknown = failure.reason;
    if (error instanceof BusUnavailableError)
      throw new RegistryNotPublishedError(error.message, error.retryAfterSeconds);
    throw error;
  }

  /** Deletes a tenant's key unless someone put it after this process did. */
  private async deleteOwn(tenantId: string, revision: number): Promise<void> {
    try {
      await this.kv.delete(tenantKey(tenantId), { previousSeq: revision });
    } catch (error) {
      if (!PUT_SINCE.test((error as Error).message)) throw error;
    }
  }
}

/** The answer of a delete whose key was put again since `previousSeq`. */
const PUT_SINCE = /wrong last sequence/i;

/**
 * The collector's side: applies every change of a tenant's key to `registry`, the current values
 * first. An entry that is not one (or names another tenant than its key) is logged and skipped by
 * the watch, which goes on with the others.
 */
export async function watchRegistry(bus: BusConnection, registry: Registry): Promise<BucketWatch> {
  const kv = await bus.kvm.open(BUCKETS.registry);
  const busKeyValues = async () => ((await kv.get(BUS_KEY_ENTRY)) === null ? 0 : 1);
  return watchBucket(
    kv,
    'tenant.>',
    (change) => {
      const tenantId = tenantOfKey(change.key);
      if (change.deleted) {
        registry.removeTenant(tenantId);
        return;
      }
      const entry = parseTenantEntry(change.entry.string());
      if (entry.tenant_id !== tenantId)
        throw new Error(`the entry of ${change.key} is tenant ${entry.tenant_id}'s`);
      registry.applyTenant(entry);
    },
    busKeyValues,
  );
}
