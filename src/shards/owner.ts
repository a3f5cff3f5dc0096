import type { BucketWatch } from '../bus/bucket-watch.js';
import type { BusConnection } from '../bus/connect.js';
import type { Context } from '../context.js';
import { ConflictError } from '../errors.js';
import type { IngestFailure } from '../ingest/loop.js';
import { componentLog } from '../telemetry/log.js';
import { OwnerLoop } from './owner-loop.js';
import { Owners } from './owners.js';
import { type ShardEntry, ShardMap } from './shard-map.js';
import { TenantMoves } from './tenant-moves.js';

export interface OwnerOptions {
  /** The shard this process owns. */
  shard: string;
  /** Where other owners reach this one: `advertise_url`, or the address listened on. */
  url: string;
  /** Called after each committed batch (the webhook sender's tick). */
  onBatch?: () => void;
}

export interface RunningOwner {
  readonly shard: string;
  /** Waits until what the stream held for this shard's tenants is in the database. */
  ingestNow(): Promise<void>;
  /** The failing batches since the last commit, for `/readyz`. */
  failure(): IngestFailure | null;
  /** Stops consuming; the batch under way commits and is acked. */
  close(): Promise<void>;
}

const log = () => componentLog('owner');

/** Puts the database's tenants the shard map does not know yet on this shard. */
async function assignUnknownTenants(
  context: Context,
  map: ShardMap,
  shard: string,
  known: ReadonlySet<string>,
): Promise<void> {
  const rows = await context.store.read((session) =>
    session.all<{ tenant_id: string }>('bus_known_tenants'),
  );
  for (const { tenant_id: tenantId } of rows) {
    if (known.has(tenantId)) continue;
    try {
      await map.assign(tenantId, shard);
      log().info({ tenant_id: tenantId, shard }, 'tenant assigned to this shard');
    } catch (error) {
      // Another owner assigned it first: the map's answer stands.
      if (!(error instanceof ConflictError)) throw error;
    }
  }
}

/**
 * `cds serve --bus --shard NAME` (issue 30): owns the tenants the shard map gives NAME. Takes
 * every tenant `active` here (the restart rule makes each consumer start right after what the
 * database holds), consumes them with the owner loop, follows the map's changes (a tenant given to
 * this shard is taken; moves, tenant-moves.ts), and announces its URL once all that runs.
 */
export async function startOwner(
  context: Context,
  bus: BusConnection,
  options: OwnerOptions,
): Promise<RunningOwner> {
  const { shard } = options;
  const map = await ShardMap.open(bus);
  const owners = await Owners.open(bus);
  const loop = new OwnerLoop(context, bus, {
    intervalMs: context.config.ingest_interval_ms,
    maxBatchEvents: context.config.max_batch_events,
    ...(options.onBatch ? { onBatch: options.onBatch } : {}),
  });
  const moves = new TenantMoves(loop, shard);
  const latest = new Map<string, ShardEntry | null>();
  let initial = true;
  // One change at a time, in the order seen: each step reads the map entry it acts on again.
  let changes: Promise<void> = Promise.resolve();
  const follow = (tenantId: string) => {
    changes = changes
      .then(() => moves.follow(tenantId, latest.get(tenantId) ?? null))
      .catch((error: unknown) =>
        log().error(
          { err: error, tenant_id: tenantId },
          'a shard map change failed; retried on the next change or restart',
        ),
      );
  };
  let watch: BucketWatch | null = null;
  try {
    watch = await map.watch((tenantId, entry) => {
      latest.set(tenantId, entry);
      if (!initial) follow(tenantId);
    });
    await watch.loaded;
    await assignUnknownTenants(context, map, shard, new Set(latest.keys()));
    for (const entry of await map.list()) latest.set(entry.tenantId, entry);
    const active = [...latest.values()].filter(
      (entry): entry is ShardEntry =>
        entry !== null && entry.assignment.shard === shard && entry.assignment.state === 'active',
    );
    await loop.take(active.map((entry) => entry.tenantId));
    loop.start();
    initial = false;
    // What is not plain `active` here (a move under way, a tenant to drop) resumes from the map.
    for (const [tenantId, entry] of latest)
      if (
        entry !== null &&
        !(entry.assignment.shard === shard && entry.assignment.state === 'active')
      )
        follow(tenantId);
    await owners.announce(shard, {
      url: options.url,
      pid: process.pid,
      started_at: context.clock.now().toISOString(),
    });
  } catch (error) {
    watch?.stop();
    owners.stop();
    await loop.stop();
    throw error;
  }
  log().info({ shard, tenants: loop.tenants().length, url: options.url }, 'owner started');
  return {
    shard,
    ingestNow: () => loop.ingestNow(),
    failure: () => loop.failure,
    async close() {
      watch?.stop();
      owners.stop();
      await changes;
      await loop.stop();
    },
  };
}
