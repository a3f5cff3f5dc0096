import { join } from 'node:path';
import { type Context, nowIso } from '../context.js';
import { NotFoundError } from '../errors.js';
import { scrubErasedFromQuarantine } from '../ingest/quarantine.js';
import type { Store } from '../store/database.js';
import type { Session } from '../store/session.js';
import { DATA_DIR_SNAPSHOT, rewriteExistingSnapshot } from '../store/snapshot.js';
import { requireWorkspace } from '../tenancy/workspaces.js';

export interface ErasedCounts {
  profiles: number;
  identifiers: number;
  metrics: number;
  segment_memberships: number;
  history_entries: number;
  events: number;
}

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
  'erasure_drop_identifiers',
  'erasure_drop_metric_values',
  'erasure_drop_vectors',
  'erasure_drop_metric_inputs',
  'erasure_drop_contributions',
  'erasure_drop_memberships',
  'erasure_drop_segment_history',
  'erasure_drop_merges',
  'erasure_drop_conflicts',
  'erasure_drop_webhooks',
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
 * an audit row records who erased what, without an identifier. Then the file is rewritten
 * (`scheduleRewrite`).
 */
export async function eraseProfile(
  context: Context,
  request: ErasureRequest,
): Promise<ErasureResult> {
  const work = async (session: Session): Promise<ErasureResult> => {
    const survivor = await survivorOf(session, request);
    const scope = {
      tenant_id: request.tenantId,
      workspace_id: request.workspaceId,
    };
    await session.run('erasure_cluster', { ...scope, survivor });
    const erased = (await session.one<ErasedCounts>('erasure_counts', scope)) as ErasedCounts;
    if (!request.dryRun) {
      const now = nowIso(context);
      await session.run('erasure_tombstones', { ...scope, now });
      for (const step of ERASURE_STEPS) await session.run(step, scope);
      await session.run('erasure_record_audit', {
        ...scope,
        ...erased,
        profile_id: survivor,
        actor: request.actor,
        now,
      });
    }
    await session.run('erasure_drop_cluster');
    return { profile_id: survivor, erased };
  };
  if (request.dryRun) return context.store.read(work);
  const result = await context.store.write(work);
  scheduleRewrite(context);
  await scrubErasedFromQuarantine(context, request.tenantId, request.workspaceId);
  return result;
}

const queuedRewrites = new WeakMap<Store, Promise<void>>();

/**
 * After a failed rewrite (most likely a disk without room for a copy of the file) the next one
 * waits this long, doubling up to an hour: each attempt copies the whole file while writes wait.
 */
const FIRST_RETRY_MS = 60_000;
const LONGEST_RETRY_MS = 60 * 60_000;
const failedRewrites = new WeakMap<Store, { attempts: number; retryAt: number }>();

/**
 * The answer goes out once the erasure is committed; the file is then replaced by a copy of its
 * live data (`Store.replaceWithCopy`), in the write queue, so whatever writes next waits for it.
 * Erasures that arrive while one rewrite is still queued share it. Before the swap, a snapshot
 * kept in the data directory is written again from the live rows, and then the copy marks the
 * erasures it purged (`purged_at`): a crash at any point before the swap leaves them unpurged, and
 * the next start does both again (`resumePurges`).
 */
function scheduleRewrite(context: Context): void {
  const { store } = context;
  if (queuedRewrites.has(store)) return;
  const dataDirSnapshot = join(context.dataDir.root, DATA_DIR_SNAPSHOT);
  const replaced = store.replaceWithCopy({
    onStart: () => queuedRewrites.delete(store),
    beforeSwap: async (session) => {
      await rewriteExistingSnapshot(session, dataDirSnapshot);
      await session.run('erasure_mark_purged', { now: nowIso(context) });
    },
  });
  queuedRewrites.set(
    store,
    replaced.then(
      () => {
        failedRewrites.delete(store);
      },
      (error: unknown) => {
        const attempts = (failedRewrites.get(store)?.attempts ?? 0) + 1;
        const delayMs = Math.min(FIRST_RETRY_MS * 2 ** (attempts - 1), LONGEST_RETRY_MS);
        failedRewrites.set(store, {
          attempts,
          retryAt: context.clock.now().getTime() + delayMs,
        });
        process.stderr.write(
          `rewriting the database file failed: ${(error as Error).message}; the erased rows stay in it until the rewrite is tried again in ${delayMs / 1000} s\n`,
        );
      },
    ),
  );
}

/**
 * Erasures committed but not yet purged from the file, because a crash or a failed rewrite cut
 * the rewrite off, are rewritten now: called when a process opens the store, and by the ingest
 * loop's upkeep, which tries a failed rewrite again once its pause is over.
 */
export async function resumePurges(context: Context): Promise<void> {
  const failed = failedRewrites.get(context.store);
  if (failed && context.clock.now().getTime() < failed.retryAt) return;
  const pending = await context.store.read((session) =>
    session.one<{ unpurged: number }>('erasure_unpurged'),
  );
  if ((pending?.unpurged ?? 0) > 0) scheduleRewrite(context);
}
