import type { Context } from '../context.js';
import { type QuarantinedFile, quarantinedLinesPath } from '../quarantine/quarantine.js';
import type { Session } from '../store/session.js';
import { sessionOf } from '../store/temporary-table.js';
import type { StoredKeys } from './dedup-index.js';
import type { ResolvedBatch } from './identities.js';
import type { Staged } from './line-source.js';
import { announceCommitted, type WorkspaceAdvance } from './live-feed.js';
import type { EventProfiles } from './store-events.js';

/** How long the live view keeps a line, and how many lines of one workspace at most. */
export const RECENT_EVENTS_WINDOW_MS = 24 * 60 * 60 * 1000;
export const RECENT_EVENTS_PER_WORKSPACE = 10_000;
/**
 * How many lines of one workspace a batch records, its newest: live traffic comes in batches
 * smaller than this, and a backlog's large batches are not paid for line by line.
 */
export const RECENT_LINES_PER_BATCH = 1_000;

/**
 * Records the outcome of each workspace's newest lines of the batch (`RECENT_LINES_PER_BATCH`)
 * in `recent_events` for the live view: stored, duplicate or rejected. A duplicate's profile is
 * its first copy's: a stored event the dedup index found, or a line the batch stored; returns what it added per
 * workspace, for the streams to be told once the batch commits.
 */
export async function recordRecentEvents(
  staged: Staged,
  resolved: Pick<ResolvedBatch, 'accepted' | 'erased'>,
  eventProfiles: EventProfiles,
  storedKeys: StoredKeys,
  now: string,
): Promise<WorkspaceAdvance[]> {
  const session = sessionOf(staged, resolved.accepted, resolved.erased, eventProfiles, storedKeys);
  return recording(session, async () => {
    await session.run('live_events_record', { cap: RECENT_LINES_PER_BATCH });
    await session.run('live_events_outcomes');
    await session.run('live_events_insert', { now });
    await session.run('live_events_drop_outcomes');
  });
}

async function recording(session: Session, write: () => Promise<unknown>) {
  const before = (await session.one<{ last_seq: number }>('live_events_last_seq'))?.last_seq ?? 0;
  await write();
  return session.all<WorkspaceAdvance>('live_events_since', { after: before });
}

/** DuckDB's own limit on a JSON line, which the ingest batch keeps. */
const SMALLEST_OBJECT_LIMIT = 16 * 1024 * 1024;

/**
 * Records the lines of a part just quarantined, as far as they parse, with its reason, and tells
 * the streams. The part is quarantined whatever happens here: lines that cannot be read as JSON
 * are left out, and a part that cannot be read at all is still listed by the quarantine routes.
 */
export async function recordQuarantined(context: Context, record: QuarantinedFile): Promise<void> {
  if (record.tenant_id === null || record.workspace_id === null) return;
  const params = {
    paths: JSON.stringify([quarantinedLinesPath(context.dataDir, record)]),
    tenant_id: record.tenant_id,
    workspace_id: record.workspace_id,
    reason: record.reason,
    now: record.quarantined_at,
    // DuckDB reads a line whole only from a buffer twice its length.
    max_object_size: Math.max(2 * record.bytes + 1, SMALLEST_OBJECT_LIMIT),
  };
  const advances = await context.store
    .write((session) =>
      recording(session, () => session.run('live_events_record_quarantined', params)),
    )
    .catch(() => []);
  announceCommitted(context.store, advances);
}

/**
 * Keeps `recent_events` to its window: the last day, at most a bounded number of lines per
 * workspace. Upkeep runs it; a read first, so the pass costs no write while nothing is due.
 */
export async function pruneRecentEvents(context: Context): Promise<void> {
  const params = {
    cutoff: new Date(context.clock.now().getTime() - RECENT_EVENTS_WINDOW_MS).toISOString(),
    cap: RECENT_EVENTS_PER_WORKSPACE,
  };
  const due = await context.store.read((session) =>
    session.one<{ due: boolean }>('live_events_prune_due', params),
  );
  if (due?.due) await context.store.write((session) => session.run('live_events_prune', params));
}
