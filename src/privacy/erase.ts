import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { z } from 'zod';
import { type Backoff, backoffMs } from '../backoff.js';
import { type Context, nowIso } from '../context.js';
import { NotFoundError } from '../errors.js';
import { scrubErasedFromQuarantine } from '../quarantine/quarantine.js';
import type { Store } from '../store/database.js';
import { removeSavedIndexes } from '../store/index-files.js';
import type { Session } from '../store/session.js';
import { DATA_DIR_SNAPSHOT, rewriteExistingSnapshot } from '../store/snapshot.js';
import { componentLog } from '../telemetry/log.js';
import { prometheusSeries } from '../telemetry/prometheus.js';
import { requireWorkspace } from '../tenancy/workspaces.js';

/**
 * Erasures one tenant may ask for per minute; more answer 429. Each erasure is cheap to answer
 * but its bytes cost a share of a rewrite of the whole file, which takes every tenant's writes
 * with it: a burst of 20 passes, a loop over a customer list does not.
 */
export const ERASURES_PER_MINUTE = 60;
export const ERASURE_LIMIT_WINDOW_MS = 60_000;

/** What an erasure removed (design §7, Erase). */
export const erasedCountsSchema = z.object({
  profiles: z.number(),
  identifiers: z.number(),
  metrics: z.number(),
  segment_memberships: z.number(),
  history_entries: z.number(),
  events: z.number(),
});

export type ErasedCounts = z.infer<typeof erasedCountsSchema>;

export interface ErasureResult {
  profile_id: string;
  erased: ErasedCounts;
}

export interface ErasureRequest {
  tenantId: string;
  workspaceId: string;
  profileId: string;
  /** Who asked, for the audit log: a token id or `operator`. */
  actor: string;
  /** Count what would go and change nothing. */
  dryRun: boolean;
}

/** The deletes, in an order that keeps the cluster findable. */
const ERASURE_STEPS = [
  'erasure_drop_events',
  'erasure_drop_recent_events',
  'erasure_drop_identifiers',
  'erasure_drop_last_seen',
  'erasure_drop_vectors',
  'erasure_drop_metric_inputs',
  'erasure_drop_contributions',
  'erasure_drop_memberships',
  'erasure_drop_segment_history',
  'erasure_drop_merges',
  'erasure_drop_conflicts',
  'erasure_drop_webhooks',
  'erasure_drop_consent',
  'erasure_drop_profiles',
] as const;

/** A merged-away id stands for its survivor's whole cluster (interface "Erase a profile"). */
async function survivorOf(session: Session, request: ErasureRequest): Promise<string> {
  await requireWorkspace(session, request.tenantId, request.workspaceId);
  const row = await session.one<{ profile_id: string; merged_into: string | null }>('get_profile', {
    tenant_id: request.tenantId,
    workspace_id: request.workspaceId,
    profile_id: request.profileId,
  });
  if (!row) {
    throw new NotFoundError(`no profile ${request.profileId} in workspace ${request.workspaceId}`);
  }
  return row.merged_into ?? row.profile_id;
}

/**
 * Erases a profile with every profile merged into it, in one transaction (design §15): their
 * identifiers, metric values and inputs, memberships, history, stored events and webhooks. The
 * identifier keys stay behind as tombstones so lines already received are dropped at ingest, and
 * an audit row records who erased what, without an identifier. The answer goes out once the
 * transaction commits; the erased bytes leave the file at the next purge (`requestPurge`).
 */
export async function eraseProfile(
  context: Context,
  request: ErasureRequest,
): Promise<ErasureResult> {
  // Fixed outside the transaction: a file rewrite may run it again on its copy, where it must
  // write the very same audit row (`Store.writeReplayable`).
  const now = nowIso(context);
  const erasureId = `er_${randomUUID().replaceAll('-', '')}`;
  const work = async (session: Session): Promise<ErasureResult> => {
    const survivor = await survivorOf(session, request);
    const scope = {
      tenant_id: request.tenantId,
      workspace_id: request.workspaceId,
    };
    await session.run('erasure_cluster', { ...scope, survivor });
    await session.run('erasure_cluster_events', scope);
    const erased = (await session.one<ErasedCounts>('erasure_counts', scope)) as ErasedCounts;
    if (!request.dryRun) {
      await session.run('erasure_tombstones', { ...scope, now });
      for (const step of ERASURE_STEPS) await session.run(step, scope);
      await session.run('erasure_record_audit', {
        ...scope,
        ...erased,
        erasure_id: erasureId,
        profile_id: survivor,
        actor: request.actor,
        now,
      });
    }
    await session.run('erasure_drop_cluster');
    await session.run('erasure_drop_cluster_events');
    return { profile_id: survivor, erased };
  };
  if (request.dryRun) return context.store.read(work);
  const result = await context.store.writeReplayable(work);
  // A saved index holds the erased person's pseudonymous keys and ids: the next process builds
  // its indexes from the tables.
  await removeSavedIndexes(context.store);
  requestPurge(context, 'coalesced');
  await scrubErasedFromQuarantine(context, request.tenantId, request.workspaceId);
  return result;
}

/**
 * A purge starts once no erasure has come for this long, so that erasures sent back to back (each
 * answered within 2 s) share one rewrite of the file...
 */
export const PURGE_QUIET_MS = 3_000;
/**
 * ...and at most this long after the first erasure it waits for, so that a steady stream is
 * purged too. A burst of 20 erasures of up to 2 s each (40 s) thus costs two rewrites at most.
 */
export const PURGE_MAX_DELAY_MS = 20_000;

/**
 * After a failed rewrite (most likely a disk without room for a copy of the file) the next one
 * waits this long, doubling up to an hour, unless a new erasure asks for one.
 */
const PURGE_RETRY_BACKOFF: Backoff = { firstMs: 60_000, longestMs: 60 * 60_000 };

/** The purges of one store: at most one waiting to start and one running. */
interface Purges {
  /** The purge waiting to start, and when the first erasure it waits for came. */
  waiting: { timer: NodeJS.Timeout; since: number } | null;
  /** Until the file is swapped. */
  running: boolean;
  /** The running purge, then its look for erasures it did not take. */
  cycle: Promise<void> | null;
  failure: { attempts: number; retryAt: number } | null;
}

const purgesOf = new WeakMap<Store, Purges>();

function purges(context: Context): Purges {
  let found = purgesOf.get(context.store);
  if (!found) {
    const created: Purges = { waiting: null, running: false, cycle: null, failure: null };
    found = created;
    purgesOf.set(context.store, created);
    // Shutdown does not leave an erasure's bytes to the next start.
    context.store.whenClosing(() => settlePurges(context));
  }
  return found;
}

/**
 * Asks for a purge, at once or coalesced with the erasures that follow (`PURGE_QUIET_MS`,
 * `PURGE_MAX_DELAY_MS`). A purge running now takes nothing more: once it has swapped the file,
 * it asks for the next one if an erasure is left (`purgeWhatIsLeft`).
 */
function requestPurge(context: Context, when: 'now' | 'coalesced'): void {
  const state = purges(context);
  if (state.running) return;
  if (when === 'now') {
    startPurge(context, state);
    return;
  }
  const now = performance.now();
  const since = state.waiting?.since ?? now;
  if (state.waiting) clearTimeout(state.waiting.timer);
  const delayMs = Math.max(0, Math.min(PURGE_QUIET_MS, since + PURGE_MAX_DELAY_MS - now));
  state.waiting = { since, timer: setTimeout(() => startPurge(context, state), delayMs) };
}

function startPurge(context: Context, state: Purges): void {
  if (state.waiting) clearTimeout(state.waiting.timer);
  state.waiting = null;
  state.running = true;
  const cycle = (async () => {
    try {
      await purge(context, state);
    } finally {
      state.running = false;
    }
    // Erasures committed after the copy's snapshot go with the next purge.
    await purgeWhatIsLeft(context, state, 'coalesced');
  })()
    .catch((error: unknown) => {
      componentLog('erasure').error({ err: error }, 'looking for erasures left to purge failed');
    })
    .finally(() => {
      if (state.cycle === cycle) state.cycle = null;
    });
  state.cycle = cycle;
}

/**
 * Starts a purge waiting for its timer at once, and resolves when no purge is waiting or
 * running: when the store closes, and for whoever must see the bytes gone.
 */
export async function settlePurges(context: Context): Promise<void> {
  const state = purgesOf.get(context.store);
  if (!state) return;
  for (;;) {
    if (state.waiting) startPurge(context, state);
    if (!state.cycle) return;
    await state.cycle;
  }
}

/**
 * Replaces the file with a copy of its live data (`Store.replaceWithCopy`). The copy marks
 * purged (`purged_at`) the erasures in its snapshot, and before the swap a snapshot kept in the
 * data directory is written again from the live rows: a crash at any point before the swap
 * leaves them unpurged, and the next start does both again (`resumePurges`).
 */
async function purge(context: Context, state: Purges): Promise<void> {
  const dataDirSnapshot = join(context.dataDir.root, DATA_DIR_SNAPSHOT);
  const startedAt = performance.now();
  try {
    await context.store.replaceWithCopy({
      inCopy: async (session) => {
        await session.run('erasure_mark_purged', { now: nowIso(context) });
      },
      beforeSwap: (session) => rewriteExistingSnapshot(session, dataDirSnapshot),
    });
    state.failure = null;
    prometheusSeries().erasurePurges.inc({ outcome: 'done' });
    componentLog('erasure').info(
      { duration_ms: Math.round(performance.now() - startedAt) },
      'purge done: the database file was rewritten without the erased rows',
    );
  } catch (error) {
    prometheusSeries().erasurePurges.inc({ outcome: 'failed' });
    const attempts = (state.failure?.attempts ?? 0) + 1;
    const delayMs = backoffMs(attempts, PURGE_RETRY_BACKOFF);
    state.failure = { attempts, retryAt: context.clock.now().getTime() + delayMs };
    componentLog('erasure').error(
      { err: error, retry_in_seconds: delayMs / 1000 },
      'rewriting the database file failed; the erased rows stay in it until the rewrite is tried again',
    );
  }
}

/** Asks for a purge if an erasure is still in the file, unless the last one failed lately. */
async function purgeWhatIsLeft(
  context: Context,
  state: Purges,
  when: 'now' | 'coalesced',
): Promise<void> {
  if (state.failure && context.clock.now().getTime() < state.failure.retryAt) return;
  if (state.waiting || state.running) return;
  const pending = await context.store.read((session) =>
    session.one<{ unpurged: number }>('erasure_unpurged'),
  );
  if ((pending?.unpurged ?? 0) > 0) requestPurge(context, when);
}

/**
 * Erasures committed but not yet purged from the file, because a crash or a failed rewrite cut
 * the rewrite off, are purged now: called when a process opens the store, and by the ingest
 * loop's upkeep, which tries a failed rewrite again once its pause is over.
 */
export async function resumePurges(context: Context): Promise<void> {
  await purgeWhatIsLeft(context, purges(context), 'now');
}
