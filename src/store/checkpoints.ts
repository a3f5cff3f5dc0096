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
 * After a write, checkpoints the log of the database at `path` into its file when `always`, or
 * when the log holds more than `threshold` bytes. The write it follows is committed whatever happens here, so
 * a failed checkpoint is reported, not thrown: the log stays, and the next write or closing the
 * store checkpoints again.
 */
export async function checkpointLog(
  writer: DuckDBConnection,
  path: string,
  always: boolean,
  threshold: number,
  recovery: Recovery,
): Promise<void> {
  const log = await stat(`${path}.wal`).catch(() => null);
  if (!log || (!always && log.size <= threshold)) return;
  await traced('checkpoint', () => writer.run('CHECKPOINT')).catch((error: unknown) => {
    // An invalidated database is reported by `Recovery.invalidated`, which starts reopening it.
    if (invalidatesDatabase(error)) recovery.failedWith(error);
    else componentLog('store').error({ err: error }, 'checkpoint after a write failed');
  });
}
