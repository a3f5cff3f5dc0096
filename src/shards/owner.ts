import { rm } from 'node:fs/promises';
import type { BucketWatch } from '../bus/bucket-watch.js';
import type { BusConnection } from '../bus/connect.js';
import { systemClock } from '../clock.js';
import type { Context } from '../context.js';
import { ConflictError } from '../errors.js';
import type { IngestFailure } from '../ingest/loop-health.js';
import { componentLog } from '../telemetry/log.js';
import { type StreamReadiness, streamReadiness } from './owner-readiness.js';
import { Owners } from './owners.js';
import { type ShardEntry, ShardMap } from './shard-map.js';
import { StreamBacklog } from './stream-backlog.js';
import { StreamLoop } from './stream-loop.js';
import { followStreamRetention } from './stream-retention.js';
import { busStagingDir } from './stream-source.js';
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
  /** Its tenants' stream backlog as last read, and whether it keeps up, for `/readyz`. */
  streamReadiness(): StreamReadiness;
  /**
   * One table of a tenant's rows as a Parquet file, for the shard it moves to (the caller deletes
   * the file); 409 unless the tenant is `copied` from this shard.
   */
  exportTable(tenantId: string, table: string): Promise<string>;
  /** Stops consuming; the batch under way commits and is acked. */
  close(): Promise<void>;
}

const log = () => componentLog('owner');
const RETRY_CHANGE_MS = 2000;
/** How soon a tenant created on this owner is assigned to its shard, and so consumed. */
const ASSIGN_NEW_TENANTS_MS = 2000;

function assignedTenants(latest: ReadonlyMap<string, ShardEntry | null>): Set<string> {
  return new Set([...latest].filter(([, entry]) => entry !== null).map(([tenantId]) => tenantId));
}

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
  // What a batch or a move left there when the process died.
  await rm(busStagingDir(context), { recursive: true, force: true });
  const map = await ShardMap.open(bus);
  const owners = await Owners.open(bus);
  const loop = new StreamLoop(context, bus, {
    intervalMs: context.config.ingest_interval_ms,
    maxBatchEvents: context.config.max_batch_events,
    ...(options.onBatch ? { onBatch: options.onBatch } : {}),
  });
  const moves = new TenantMoves(context, map, loop, owners, shard);
  const backlog = new StreamBacklog(
    bus,
    () => loop.tenants(),
    context.config.bus_backlog_interval_ms,
  );
  const latest = new Map<string, ShardEntry | null>();
  let initial = true;
  let closed = false;
  let assigning: NodeJS.Timeout | undefined;
  // One change at a time, in the order seen; each acts on the tenant's latest entry.
  let changes: Promise<void> = Promise.resolve();
  const follow = (tenantId: string) => {
    changes = changes
      .then(() => moves.follow(tenantId, latest.get(tenantId) ?? null))
      .catch((error: unknown) => {
        log().error(
          { err: error, tenant_id: tenantId },
          'a shard map change could not be applied; it is tried again',
        );
        // A compare-and-set lost, or the other owner unreachable: the entry decides again.
        setTimeout(() => {
          if (!closed) follow(tenantId);
        }, RETRY_CHANGE_MS).unref();
      });
  };
  let watch: BucketWatch | null = null;
  let stopRetention = () => {};
  try {
    stopRetention = await followStreamRetention(context, bus);
    watch = await map.watch((tenantId, entry) => {
      latest.set(tenantId, entry);
      if (!initial) follow(tenantId);
    });
    await watch.loaded;
    await assignUnknownTenants(context, map, shard, assignedTenants(latest));
    for (const entry of await map.list()) latest.set(entry.tenantId, entry);
    const active = [...latest.values()].filter(
      (entry): entry is ShardEntry =>
        entry !== null && entry.assignment.shard === shard && entry.assignment.state === 'active',
    );
    await loop.take(active.map((entry) => entry.tenantId));
    // Read before the first round: a backlog left while the owner was down shows from the start.
    await backlog.start();
    loop.start();
    initial = false;
    // A move under way or a tenant to drop resumes from the map, and a change seen while the
    // tenants were being taken is applied (following an entry already applied does nothing).
    for (const tenantId of latest.keys()) follow(tenantId);
    // A tenant created here later (the control plane of this owner) is put on this shard too.
    assigning = setInterval(() => {
      changes = changes
        .then(() => assignUnknownTenants(context, map, shard, assignedTenants(latest)))
        .catch((error: unknown) =>
          log().error({ err: error }, 'new tenants could not be assigned; tried again'),
        );
    }, ASSIGN_NEW_TENANTS_MS);
    assigning.unref();
    await owners.announce(shard, {
      url: options.url,
      pid: process.pid,
      started_at: context.clock.now().toISOString(),
    });
  } catch (error) {
    clearInterval(assigning);
    stopRetention();
    watch?.stop();
    owners.stop();
    await backlog.stop();
    await loop.stop();
    throw error;
  }
  log().info({ shard, tenants: loop.tenants().length, url: options.url }, 'owner started');
  return {
    shard,
    ingestNow: () => loop.ingestNow(),
    failure: () => loop.failure,
    streamReadiness: () => {
      const failure = loop.failure;
      return streamReadiness({
        reading: backlog.latest(),
        loopFailingMs: failure ? context.clock.now().getTime() - Date.parse(failure.since) : null,
        maxLagMs: context.config.bus_ready_max_lag_ms,
        now: systemClock.now(),
      });
    },
    exportTable: (tenantId, table) => moves.exportTable(tenantId, table),
    async close() {
      closed = true;
      clearInterval(assigning);
      stopRetention();
      watch?.stop();
      owners.stop();
      await backlog.stop();
      await changes;
      await loop.stop();
    },
  };
}
