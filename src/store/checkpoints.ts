import { stat } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import { componentLog } from '../telemetry/log.js';
import { traced } from '../trace.js';
import type { Recovery } from './recovery.js';
import { invalidatesDatabase } from './storage-fault.js';

/** DuckDB's own default for its automatic checkpoint, which the store takes over (`Store.write`). */
const CHECKPOINT_WAL_BYTES = 16 * 1024 * 1024;

/**
 * After a write, checkpoints the log of the database at `path` into its file when `always`, or
 * when the log holds more than 16 MiB. The write it follows is committed whatever happens here, so
 * a failed checkpoint is reported, not thrown: the log stays, and the next write or closing the
 * store checkpoints again.
 */
export async function checkpointLog(
  writer: DuckDBConnection,
  path: string,
  always: boolean,
  recovery: Recovery,
): Promise<void> {
  const log = await stat(`${path}.wal`).catch(() => null);
  if (!log || (!always && log.size <= CHECKPOINT_WAL_BYTES)) return;
  await traced('checkpoint', () => writer.run('CHECKPOINT')).catch((error: unknown) => {
    // An invalidated database is reported by `Recovery.invalidated`, which starts reopening it.
    if (invalidatesDatabase(error)) recovery.failedWith(error);
    else componentLog('store').error({ err: error }, 'checkpoint after a write failed');
  });
}
