import { type Context, nowIso } from '../context.js';
import type { Session } from '../store/session.js';
import { dedupIndexOf } from './dedup-index.js';
import { identifierIndexOf } from './identifier-index.js';
import { announceCommitted } from './live-feed.js';
import { type IngestedLines, ingestLines } from './pipeline.js';
import type { IngestSource } from './source.js';

export interface BatchResult {
  files: number;
  lines: number;
  stored: number;
  duplicates: number;
  rejected: number;
  unparsable: number;
  droppedIdentifiers: number;
  newProfiles: number;
  merges: number;
}

const EMPTY_BATCH: BatchResult = {
  files: 0,
  lines: 0,
  stored: 0,
  duplicates: 0,
  rejected: 0,
  unparsable: 0,
  droppedIdentifiers: 0,
  newProfiles: 0,
  merges: 0,
};

/**
 * From this many lines, a batch is checkpointed as soon as it commits, and DuckDB's cache of table
 * blocks emptied (`Store.write`, large): a backlog's rows and blocks would otherwise pile up in
 * memory. A smaller batch, as live traffic makes them, leaves its rows in the log until the log
 * holds `checkpoint_threshold`, and the tables it read cached for the next: a checkpoint each
 * was a fixed part of a live batch that grew with the store (65 ms of a 1,000-event batch of
 * 384 ms into an empty store, 116–190 ms of 720–865 ms at 10M events; docs/decisions.md,
 * "Checkpoints").
 */
const LARGE_BATCH_LINES = 50_000;

/** What a batch of `files` landing files (0 for the events stream) did, from its counts. */
function batchResult(files: number, ingested: IngestedLines): BatchResult {
  const { counts } = ingested;
  return {
    files,
    lines: counts.lines,
    stored: counts.stored,
    duplicates: counts.valid - counts.first_seen - counts.erased,
    rejected: counts.rejected + (counts.first_seen - counts.stored) + counts.erased,
    unparsable: counts.unparsable,
    droppedIdentifiers: ingested.droppedIdentifiers,
    newProfiles: counts.new_profiles,
    merges: ingested.merges,
  };
}

/**
 * The end of a batch's transaction: the stats updated, then the batch's temporary tables dropped
 * (on failure the rollback takes them with it).
 */
async function closeBatch(
  session: Session,
  batch: BatchResult,
  ingested: IngestedLines,
  now: string,
): Promise<void> {
  await session.run('ingest_update_stats', {
    files: batch.files,
    stored: batch.stored,
    duplicates: batch.duplicates,
    rejected: batch.rejected,
    unparsable: batch.unparsable,
    dropped_identifiers: batch.droppedIdentifiers,
    last_received_at: ingested.counts.last_received_at,
    now,
  });
  await session.run('ingest_drop_temporaries');
}

/**
 * One micro-batch (design §9), whatever its source: in one transaction the pipeline's steps store
 * the events, resolve identities and apply metrics and segments, and the source records its units
 * done (landing files, the stream's sequences), so a crash before the commit reads them again and
 * one after it skips them. Once committed, the live streams are told and the source does
 * its after-commit work (landing files deleted); the events stream acknowledges in its loop.
 */
export async function ingestBatch<Unit>(
  context: Context,
  source: IngestSource<Unit>,
  units: readonly Unit[],
): Promise<BatchResult> {
  if (units.length === 0) return EMPTY_BATCH;
  const prepared = await source.prepare(units);
  if (prepared === null) return EMPTY_BATCH;
  let committed = false;
  try {
    const { batch, advances, dedupAdditions, identityAdditions } = await context.store.write(
      async (session) => {
        const now = nowIso(context);
        const ingested = await ingestLines(context, session, prepared.lines, now);
        await prepared.recordDone(ingested.staged, now);
        const batch = batchResult(prepared.files, ingested);
        await closeBatch(session, batch, ingested, now);
        return {
          batch,
          advances: ingested.advances,
          dedupAdditions: ingested.dedupAdditions,
          identityAdditions: ingested.identityAdditions,
        };
      },
      { large: ({ batch }) => batch.lines >= LARGE_BATCH_LINES },
    );
    committed = true;
    dedupIndexOf(context.store).committed(dedupAdditions);
    identifierIndexOf(context.store).committed(identityAdditions);
    announceCommitted(context.store, advances);
    return batch;
  } finally {
    await prepared.finish(committed);
  }
}
