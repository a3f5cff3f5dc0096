import { unlink } from 'node:fs/promises';
import { sep } from 'node:path';
import type { Context } from '../context.js';
import { quarantineFile } from '../quarantine/quarantine.js';
import type { Session } from '../store/session.js';
import { sessionOf } from '../store/temporary-table.js';
import { digestFiles, type FileDigest } from './landing-files.js';
import { ndjsonFiles, originsParam, type Staged } from './line-source.js';
import type { IngestSource } from './source.js';
import { halveSealedFile } from './split-file.js';

/** Files a crash left behind after their batch committed: already in, so only deleted. */
async function dropDone(session: Session, paths: readonly string[]): Promise<string[]> {
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

/** The landing partition `tenant=<t>/workspace=<w>` a sealed file lies in. */
function partitionKey(path: string): string {
  const parts = path.split(sep);
  const tenant = parts.findIndex((part) => part.startsWith('tenant='));
  return tenant < 0 ? path : parts.slice(tenant, tenant + 2).join(sep);
}

/**
 * Sealed landing files (design §2, §9), a unit per file: a batch records each in
 * `ingested_files` and deletes it once committed. A failing file is cut in halves on disk
 * (split-file.ts), so a crash in the middle of a bisect redoes the same cut, and a file of one
 * failing line moves to the quarantine whole.
 */
export function landingSource(context: Context): IngestSource<string> {
  return {
    async prepare(paths) {
      const pending = await context.store.read((session) => dropDone(session, paths));
      if (pending.length === 0) return null;
      // Hashing runs on this thread while DuckDB reads the same files on its own.
      const hashing = digestFiles(pending);
      // A batch that fails before it awaits the digests must not leave their failure unheard.
      hashing.catch(() => undefined);
      return {
        lines: ndjsonFiles(pending),
        files: pending.length,
        async recordDone(staged, now) {
          await recordFiles(staged, await hashing, now);
        },
        async finish(committed) {
          if (committed)
            await Promise.all(pending.map((path) => unlink(path).catch(() => undefined)));
        },
      };
    },
    partitionOf: partitionKey,
    halve: halveSealedFile,
    quarantine: (path, failure, now) => quarantineFile(context.dataDir, path, failure, now),
  };
}
