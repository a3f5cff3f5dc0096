import { stat } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { componentLog } from '../telemetry/log.js';
import { traced } from '../trace.js';
import type { Recovery } from './recovery.js';
import { invalidatesDatabase } from './storage-fault.js';

/**
 * DuckDB's own default for its automatic checkpoint, which the store takes over (`Store.write`):
 * the setting `checkpoint_threshold` when not given.
 */
export const CHECKPOINT_LOG_BYTES = 16 * 1024 * 1024;

/**
 * A checkpoint in this many vacuums the deleted rows; the others leave them marked. DuckDB
 * vacuums at every checkpoint by default, merging the row groups that deletions thinned: a batch's
 * merges delete and insert again a few hundred rows of `profiles` scattered over the table, and
 * the vacuum then rewrites the table (400 ms of a 480 ms checkpoint at 10M events, up to 1.9 s),
 * where leaving them costs the scans little until the next vacuum.
 */
export const CHECKPOINTS_A_VACUUM = 8;
/** DuckDB's default: what a vacuuming checkpoint may do. */
const VACUUM_TASKS = 100;

/** A checkpoint of the log into the file, vacuuming the deleted rows when `vacuum`. */
export async function checkpoint(
  writer: DuckDBConnection,
  vacuum: boolean,
  statement: 'CHECKPOINT' | 'FORCE CHECKPOINT' = 'CHECKPOINT',
): Promise<void> {
  if (!vacuum) {
    await traced('checkpoint', () => writer.run(statement));
    return;
  }
  await writer.run(`SET GLOBAL max_vacuum_tasks = ${VACUUM_TASKS}`);
  try {
    await traced('checkpoint with vacuum', () => writer.run(statement));
  } finally {
    await writer.run('SET GLOBAL max_vacuum_tasks = 0');
  }
}

/**
 * After a write, checkpoints the log of the database at `path` into its file when `always`, or
 * when the log holds more than `threshold` bytes; one such checkpoint in CHECKPOINTS_A_VACUUM
 * vacuums. The write it follows is committed whatever happens here, so a failed checkpoint is
 * reported, not thrown: the log stays, and the next write or closing the store checkpoints again.
 */
export class LogCheckpoints {
  private sinceVacuum = 0;

  constructor(
    private readonly path: string,
    private readonly threshold: number,
    private readonly recovery: Recovery,
  ) {}

  async afterWrite(writer: DuckDBConnection, always: boolean): Promise<void> {
    const log = await stat(`${this.path}.wal`).catch(() => null);
    if (!log || (!always && log.size <= this.threshold)) return;
    const vacuum = this.sinceVacuum + 1 >= CHECKPOINTS_A_VACUUM;
    try {
      await checkpoint(writer, vacuum);
      this.sinceVacuum = vacuum ? 0 : this.sinceVacuum + 1;
    } catch (error) {
      // An invalidated database is reported by `Recovery.invalidated`, which starts reopening it.
      if (invalidatesDatabase(error)) this.recovery.failedWith(error);
      else componentLog('store').error({ err: error }, 'checkpoint after a write failed');
    }
  }

  /** A checkpoint asked for outside a write: it vacuums, and the count starts again. */
  async forced(writer: DuckDBConnection): Promise<void> {
    await checkpoint(writer, true, 'FORCE CHECKPOINT');
    this.sinceVacuum = 0;
  }
}
