import { existsSync, readdirSync, statSync } from 'node:fs';
import { mkdtemp, rename, rm, rmdir } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { ValidationError } from '../errors.js';
import {
  ANALYST_TABLES,
  type AnalystRowCounts,
  type AnalystTable,
  analystView,
  withAnalystViews,
} from './analyst-views.js';
import type { Store } from './database.js';
import type { Session } from './session.js';
import { sqlStringLiteral } from './sql-files.js';

/** The longest file name Linux file systems take, in bytes. */
const MAX_FILE_NAME_BYTES = 255;

/** The private folder an export is written in, beside its target, before it takes its name. */
export const EXPORT_PARTIAL_PREFIX = '.cds-export-';

export const EXPORT_FORMATS = ['parquet'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** Called after each table is written, so a caller can show how far the export got. */
export type ExportProgress = (doneTables: number, totalTables: number) => void;

export interface ExportResult {
  dir: string;
  format: ExportFormat;
  rows: AnalystRowCounts;
}

/**
 * The events folder's partitions: a workspace belongs to its tenant, so the tenant leads, and the
 * day is the UTC date of `occured_at`. DuckDB percent-encodes a value that is no safe folder name;
 * ids (design §6) and dates are safe as they are.
 */
const EVENT_PARTITIONS = '(tenant_id, workspace_id, date)';

/**
 * Writes the analysts' tables (the snapshot's, through the same views) to `out` as Parquet: one
 * file per table, the events under `events/tenant_id=…/workspace_id=…/date=…/`. Nothing runs
 * meanwhile, so the files are one moment of the database. They are written into a new private
 * folder beside `out` and renamed into place, so a reader never finds half an export.
 */
export async function writeParquetExport(
  store: Store,
  out: string,
  onProgress?: ExportProgress,
): Promise<ExportResult> {
  const dir = resolve(out);
  if (dir.includes('\0')) {
    throw ValidationError.field('dir', 'holds a NUL byte, which no folder name can');
  }
  if (Buffer.byteLength(basename(dir)) > MAX_FILE_NAME_BYTES) {
    throw ValidationError.field('dir', `has a name longer than ${MAX_FILE_NAME_BYTES} bytes`);
  }
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) {
      throw ValidationError.field('dir', `${dir} is a file; name a new or empty folder`);
    }
    if (readdirSync(dir).length > 0) {
      throw ValidationError.field('dir', `${dir} is not empty; name a new or empty folder`);
    }
  } else if (!existsSync(dirname(dir))) {
    throw ValidationError.field('dir', `the folder ${dirname(dir)} does not exist`);
  }
  // mkdtemp makes the folder 0700: the files hold every tenant's profiles and events.
  const partial = await mkdtemp(join(dirname(dir), EXPORT_PARTIAL_PREFIX));
  try {
    const rows = await store.exclusive((session) => copyTables(session, partial, onProgress));
    if (existsSync(dir)) await rmdir(dir);
    await rename(partial, dir);
    return { dir, format: 'parquet', rows };
  } catch (error) {
    await rm(partial, { recursive: true, force: true });
    throw error;
  }
}

async function copyTables(
  session: Session,
  dir: string,
  onProgress: ExportProgress | undefined,
): Promise<AnalystRowCounts> {
  const rows = {} as AnalystRowCounts;
  await withAnalystViews(session, async () => {
    for (const [index, table] of ANALYST_TABLES.entries()) {
      rows[table] = await copyTable(session, table, dir);
      onProgress?.(index + 1, ANALYST_TABLES.length);
    }
  });
  return rows;
}

async function copyTable(session: Session, table: AnalystTable, dir: string): Promise<number> {
  const [copied] =
    table === 'events'
      ? await copyPartitionedEvents(session, join(dir, 'events'))
      : await session.allText<{ Count: number }>(
          `COPY ${analystView(table)} TO ${sqlStringLiteral(join(dir, `${table}.parquet`))} (FORMAT parquet)`,
        );
  return copied?.Count ?? 0;
}

/** DuckDB makes the folder even when there are no events, so a reader finds it, empty. */
function copyPartitionedEvents(session: Session, dir: string) {
  return session.allText<{ Count: number }>(
    `COPY analyst_events_by_date TO ${sqlStringLiteral(dir)} (FORMAT parquet, PARTITION_BY ${EVENT_PARTITIONS})`,
  );
}
