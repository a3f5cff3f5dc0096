import { unlink } from 'node:fs/promises';
import { type Context, nowIso } from '../context.js';
import type { Session } from '../store/session.js';
import { sessionOf } from '../store/temporary-table.js';
import { dedupIndexOf } from './dedup-index.js';
import { digestFiles, type FileDigest } from './landing-files.js';
import { landingFiles, originsParam, type Staged } from './line-source.js';
import { announceCommitted } from './live-feed.js';
import { type IngestedLines, ingestLines } from './pipeline.js';

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

/** Files a crash left behind after their batch committed: already in, so only deleted. */
async function dropDone(session: Session, paths: string[]): Promise<string[]> {
  const done = new Set(
    (
      await session.all<{ path: string }>('ingest_already_done', { paths: JSON.stringify(paths) })
    ).map((row) => row.path),
  );
  await Promise.all([...done].map((path) => unlink(path).catch(() => undefined)));
  return paths.filter((path) => !done.has(path));
}

/**
 * Records each file with its size, digest and line count in `ingested_files`, so a crash after
 * the commit skips it. Counts the staged lines, so it runs before the batch drops them.
 */
async function recordFiles(staged: Staged, digests: FileDigest[], now: string): Promise<void> {
  const session = sessionOf(staged);
  const paths = originsParam(staged);
  const lineCounts = new Map(
    (await session.all<{ path: string; lines: number }>('ingest_file_line_counts', { paths })).map(
      (row) => [row.path, row.lines],
    ),
  );
  await session.run('ingest_record_files', {
    rows: JSON.stringify(
      digests.map((digest) => ({ ...digest, lines: lineCounts.get(digest.path) ?? 0 })),
    ),
    now,
  });
}

/** What a batch of `files` landing files (0 for other sources) did, from its counts. */
export function batchResult(files: number, ingested: IngestedLines): BatchResult {
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
 * The end of a batch's transaction, whatever its source: the stats updated, then the batch's
 * temporary tables dropped (on failure the rollback takes them with it).
 */
export async function closeBatch(
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
 * One micro-batch of landing files (design §9): every given sealed file, in one transaction that
 * stores the events, resolves identities and records the files; the files are deleted after the
 * commit. A crash before the commit leaves the files to be read again; after it, they are skipped.
 */
export async function ingestBatch(context: Context, paths: string[]): Promise<BatchResult> {
  const pending = await context.store.read((session) => dropDone(session, paths));
  if (pending.length === 0) {
    return {
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
  }
  // Hashing runs on this thread while DuckDB reads the same files on its own.
  const hashing = digestFiles(pending);
  const {
    batch: result,
    advances,
    dedupAdditions,
  } = await context.store.write(
    async (session) => {
      const now = nowIso(context);
      const ingested = await ingestLines(context, session, landingFiles(pending), now);
      await recordFiles(ingested.staged, await hashing, now);
      const batch = batchResult(pending.length, ingested);
      await closeBatch(session, batch, ingested, now);
      return { batch, advances: ingested.advances, dedupAdditions: ingested.dedupAdditions };
    },
    { large: true },
  );
  dedupIndexOf(context.store).committed(dedupAdditions);
  announceCommitted(context.store, advances);
  await Promise.all(pending.map((path) => unlink(path).catch(() => undefined)));
  return result;
}
