import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Context, nowIso } from '../context.js';
import { NotFoundError } from '../errors.js';
import type { Session, Store } from '../store/database.js';
import { copySnapshot, DATA_DIR_SNAPSHOT } from '../store/snapshot.js';
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

/** Blank-then-delete pairs and plain deletes, in an order that keeps the cluster findable. */
const ERASURE_STEPS = [
  'erasure_blank_events',
  'erasure_drop_events',
  'erasure_blank_identifiers',
  'erasure_drop_identifiers',
  'erasure_blank_metric_values',
  'erasure_drop_metric_values',
  'erasure_drop_vectors',
  'erasure_blank_metric_inputs',
  'erasure_drop_metric_inputs',
  'erasure_drop_contributions',
  'erasure_drop_memberships',
  'erasure_drop_segment_history',
  'erasure_blank_merges',
  'erasure_drop_merges',
  'erasure_blank_conflicts',
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
  scheduleRewrite(context.store, join(context.dataDir.root, DATA_DIR_SNAPSHOT));
  return result;
}

const queuedRewrites = new WeakMap<Store, Promise<void>>();

/**
 * The answer goes out once the erasure is committed; the file rewrite follows in the write queue,
 * so whatever comes next (a write, a checkpoint, closing the store) waits for it. Erasures that
 * arrive while one rewrite is still queued share it. A snapshot kept in the data directory is
 * written again after it.
 */
function scheduleRewrite(store: Store, dataDirSnapshot: string): void {
  if (queuedRewrites.has(store)) return;
  const rewrite = rewriteDatabaseFile(store, dataDirSnapshot, () =>
    queuedRewrites.delete(store),
  ).catch((error: unknown) => {
    process.stderr.write(`rewriting the database file failed: ${(error as Error).message}\n`);
  });
  queuedRewrites.set(store, rewrite);
}

const SCRUB_ROUNDS = 4;
/** Bytes one filler row takes once stored, at the least. */
const FILLER_ROW_BYTES = 64;

/** Fills every free block with random rows and drops them again. */
async function scrubFreeBlocks(session: Session): Promise<void> {
  // A round that left free blocks over is repeated with twice the filler.
  for (let round = 0; round < SCRUB_ROUNDS; round++) {
    const free = await session.one<{ free_bytes: number }>('erasure_free_space');
    const freeBytes = free?.free_bytes ?? 0;
    if (freeBytes === 0) return;
    await session.run('erasure_fill_free_space', {
      rows: Math.ceil((freeBytes * 2 ** round) / FILLER_ROW_BYTES) + 4096,
    });
    await session.runText('FORCE CHECKPOINT');
    const left = await session.one<{ free_bytes: number }>('erasure_free_space');
    await session.run('erasure_drop_scrub');
    await session.runText('FORCE CHECKPOINT');
    if ((left?.free_bytes ?? 0) === 0) return;
  }
}

/**
 * Deleted rows stay in their blocks, and DuckDB packs small segments of many tables into shared
 * blocks, so neither a checkpoint nor rewriting one table clears erased bytes. The whole file is
 * rewritten instead: every table is copied to a side file, dropped, and copied back into the
 * freed blocks; the blocks left free are filled with random rows. Afterwards no erased byte is in
 * the database file (design §15), and the side file is deleted.
 */
async function rewriteDatabaseFile(
  store: Store,
  dataDirSnapshot: string,
  onStart: () => void,
): Promise<void> {
  const side = `${store.path}.rewrite`;
  await store.exclusive(async (session) => {
    onStart();
    await Promise.all([rm(side, { force: true }), rm(`${side}.wal`, { force: true })]);
    await session.runText('FORCE CHECKPOINT');
    await session.runText(`ATTACH '${side.replaceAll("'", "''")}' AS cds_rewrite`);
    try {
      await session.run('erasure_copy_out');
      const tables = await session.all<{ table_name: string }>('erasure_tables');
      for (const { table_name } of tables) {
        await session.runText(`DROP TABLE cds.main."${table_name.replaceAll('"', '""')}"`);
      }
      await session.runText('FORCE CHECKPOINT');
      await session.run('erasure_copy_back');
    } finally {
      await session.run('erasure_detach');
    }
    await session.runText('FORCE CHECKPOINT');
    await scrubFreeBlocks(session);
    // A snapshot in the data directory would keep the erased rows: it is written again.
    if (existsSync(dataDirSnapshot)) await copySnapshot(session, dataDirSnapshot);
  });
  await Promise.all([rm(side, { force: true }), rm(`${side}.wal`, { force: true })]);
}
