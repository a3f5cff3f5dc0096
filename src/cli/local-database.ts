import { statSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config.js';
import { DATABASE_FILE } from '../store/data-dir.js';
import type { GlobalOptions } from './admin-request.js';

/**
 * The bytes of the database a command without `--server` opens (file and log), for the progress
 * of a copy of it; null with `--server`, whose file may be on another machine, or when none is
 * there yet. A copy holds live rows only, so it is an upper bound.
 */
export function localDatabaseBytes(globals: GlobalOptions): number | null {
  if (globals.server) return null;
  const path = join(loadConfig({ data_dir: globals.dataDir }).data_dir, DATABASE_FILE);
  const size = (file: string) => statSync(file, { throwIfNoEntry: false })?.size ?? 0;
  const bytes = size(path) + size(`${path}.wal`);
  return bytes > 0 ? bytes : null;
}
