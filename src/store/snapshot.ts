import { existsSync, statSync } from 'node:fs';
import { chmod, rename, rm } from 'node:fs/promises';
import { basename, dirname, resolve } from 'node:path';
import { ValidationError } from '../errors.js';
import { componentLog } from '../telemetry/log.js';
import {
  ANALYST_TABLES,
  type AnalystRowCounts,
  analystView,
  withAnalystViews,
} from './analyst-views.js';
import type { Store } from './database.js';
import { PRIVATE_FILE_MODE } from './file-modes.js';
import type { Session } from './session.js';
import { sqlStringLiteral } from './sql-files.js';

/** Where `cds serve --snapshot-every` writes, in the data directory, unless told otherwise. */
export const DATA_DIR_SNAPSHOT = 'snapshot.duckdb';

export type SnapshotCounts = AnalystRowCounts;

/** The longest file name Linux file systems take, in bytes. */
const MAX_FILE_NAME_BYTES = 255;
/** The longest suffix the copy adds to the name while it writes (`partialPath`, its log). */
const PARTIAL_SUFFIX = '.partial.wal';

/**
 * Writes a consistent copy of the analysts' tables to a new DuckDB file. Nothing runs meanwhile,
 * so the copy is one moment of the database.
 */
export async function writeSnapshot(
  store: Store,
  out: string,
  options: { replace: boolean },
): Promise<{ path: string; rows: SnapshotCounts }> {
  const path = resolve(out);
  if (path.includes('\0')) {
    throw ValidationError.field('path', 'holds a NUL byte, which no file name can');
  }
  if (Buffer.byteLength(basename(path)) > MAX_FILE_NAME_BYTES - PARTIAL_SUFFIX.length) {
    throw ValidationError.field(
      'path',
      `has a file name longer than ${MAX_FILE_NAME_BYTES - PARTIAL_SUFFIX.length} bytes`,
    );
  }
  if (existsSync(path) && statSync(path).isDirectory()) {
    throw ValidationError.field('path', `${path} is a folder; name a file in it`);
  }
  if (path === resolve(store.path)) {
    throw ValidationError.field('path', 'is the live database file');
  }
  if (existsSync(path) && !options.replace) {
    throw ValidationError.field('path', `${path} already exists`);
  }
  if (!existsSync(dirname(path))) {
    throw ValidationError.field('path', `the folder ${dirname(path)} does not exist`);
  }
  const rows = await store.exclusive((session) => copySnapshot(session, path));
  return { path, rows };
}

const partialPath = (path: string) => `${path}.partial`;

async function removePartial(path: string): Promise<void> {
  const partial = partialPath(path);
  await Promise.all([rm(partial, { force: true }), rm(`${partial}.wal`, { force: true })]);
}

/**
 * The copy itself, on a session that nothing else uses meanwhile (inside `Store.exclusive`). It is
 * written beside `path` and renamed into place, so a reader never opens a half-written snapshot.
 */
export async function copySnapshot(session: Session, path: string): Promise<SnapshotCounts> {
  const partial = partialPath(path);
  await removePartial(path);
  await session.runText(`ATTACH ${sqlStringLiteral(partial)} AS cds_snapshot`);
  let rows: SnapshotCounts;
  try {
    await withAnalystViews(session, async () => {
      for (const table of ANALYST_TABLES) {
        await session.runText(`CREATE TABLE cds_snapshot.${table} AS FROM ${analystView(table)}`);
      }
    });
    rows = (await session.one<SnapshotCounts>('snapshot_row_counts')) as SnapshotCounts;
  } finally {
    await session.run('snapshot_detach');
  }
  // DuckDB creates the file with the process's umask, which only the CLI sets.
  await chmod(partial, PRIVATE_FILE_MODE);
  await rename(partial, path);
  await rm(`${partial}.wal`, { force: true });
  return rows;
}

/**
 * After an erasure: the snapshot at `path` is written again from the live rows if there is one,
 * and a half-written one a crash left, which may hold rows erased since, is removed.
 */
export async function rewriteExistingSnapshot(session: Session, path: string): Promise<void> {
  if (existsSync(path)) await copySnapshot(session, path);
  else await removePartial(path);
}

/** Rewrites the snapshot at `path` every `everyMs` (`cds serve --snapshot-every`). */
export function snapshotEvery(
  store: Store,
  path: string,
  everyMs: number,
): { stop(): Promise<void> } {
  let running: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    running ??= writeSnapshot(store, path, { replace: true })
      .catch((error: unknown) => {
        componentLog('snapshot').error({ path, err: error }, 'snapshot failed');
      })
      .finally(() => {
        running = null;
      });
  }, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
