import { unlink } from 'node:fs/promises';
import { type Context, nowIso } from '../context.js';
import { applyBatchToMetrics, metricTime } from '../metrics/materialize.js';
import type { Session } from '../store/session.js';
import { resolveAndApply } from './identities.js';
import { digestFiles } from './landing-files.js';
import { evaluateAfterMetricStep } from './upkeep.js';

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

interface Counts {
  lines: number;
  valid: number;
  first_seen: number;
  /** First-seen lines dropped because they were in flight for an erased profile. */
  erased: number;
  stored: number;
  new_profiles: number;
  rejected: number;
  unparsable: number;
  last_received_at: string | null;
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
 * One micro-batch (design §9): every given sealed landing file, in one transaction that stores the
 * events, resolves identities and records the files; the files are deleted after the commit. A
 * crash before the commit leaves the files to be read again; after it, they are skipped.
 */
export async function ingestBatch(context: Context, paths: string[]): Promise<BatchResult> {
  const pending = await context.store.read((session) => dropDone(session, paths));
  const empty: BatchResult = {
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
  if (pending.length === 0) return empty;
  const files = JSON.stringify(pending);
  // Hashing runs on this thread while DuckDB reads the same files on its own.
  const hashing = digestFiles(pending);
  const result = await context.store.write(
    async (session) => {
      const now = nowIso(context);
      const catalog = (await session.one<{ workspaces: string; event_types: string }>(
        'ingest_catalog',
      )) as { workspaces: string; event_types: string };
      await session.run('ingest_stage', { paths: files, ...catalog });
      await session.run('ingest_mark_duplicates');
      const identity = await resolveAndApply(session, context.keyRing, now);
      await session.run('ingest_assign_profiles');
      // The stored tables resolving scanned stay cached beside the batch's temporary tables
      // through storing its events, the peak of a batch: evicted first.
      await context.store.releaseTableCache();
      await session.run('ingest_insert_events', { now });
      await session.run('ingest_touch_profiles');
      const time = metricTime(now);
      await applyBatchToMetrics(session, time, { merged: identity.merges > 0 });
      await evaluateAfterMetricStep(context, session, time);
      await session.run('ingest_record_rejections', { paths: files, now });
      const counts = (await session.one<Counts>('ingest_batch_counts')) as Counts;
      const lineCounts = new Map(
        (
          await session.all<{ path: string; lines: number }>('ingest_file_line_counts', {
            paths: files,
          })
        ).map((row) => [row.path, row.lines]),
      );
      await session.run('ingest_record_files', {
        rows: JSON.stringify(
          (await hashing).map((digest) => ({ ...digest, lines: lineCounts.get(digest.path) ?? 0 })),
        ),
        now,
      });
      const batch: BatchResult = {
        files: pending.length,
        lines: counts.lines,
        stored: counts.stored,
        duplicates: counts.valid - counts.first_seen - counts.erased,
        rejected: counts.rejected + (counts.first_seen - counts.stored) + counts.erased,
        unparsable: counts.unparsable,
        droppedIdentifiers: identity.dropped,
        newProfiles: counts.new_profiles,
        merges: identity.merges,
      };
      await session.run('ingest_update_stats', {
        files: batch.files,
        stored: batch.stored,
        duplicates: batch.duplicates,
        rejected: batch.rejected,
        unparsable: batch.unparsable,
        dropped_identifiers: batch.droppedIdentifiers,
        last_received_at: counts.last_received_at,
        now,
      });
      // On failure the rollback takes the temporary tables with it.
      await session.run('ingest_drop_temporaries');
      return batch;
    },
    { large: true },
  );
  await Promise.all(pending.map((path) => unlink(path).catch(() => undefined)));
  return result;
}
