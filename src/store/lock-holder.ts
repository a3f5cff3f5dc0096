import { readFileSync } from 'node:fs';
import type { DuckDBInstance } from '@duckdb/node-api';
import { StoreLockedError } from '../errors.js';
import { duckdb } from './duckdb.js';

const LOCK_HOLDER = /Conflicting lock is held in (.+?) \(PID (\d+)\)/;

function commandOf(pid: number, fallback: string): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return argv.join(' ') || fallback;
  } catch {
    return fallback;
  }
}

/**
 * DuckDB's refusal to open a file another process holds, as `StoreLockedError` naming that
 * process; any other error unchanged.
 */
export function lockError(path: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (!message.includes('Could not set lock')) return error as Error;
  const match = LOCK_HOLDER.exec(message);
  const pid = match ? Number(match[2]) : null;
  return new StoreLockedError(
    path,
    pid === null ? null : { pid, command: commandOf(pid, match?.[1] ?? 'unknown') },
  );
}

/**
 * Fails with `StoreLockedError` when another process holds the file at `path`, to be sure before
 * it is replaced (`cds restore --force`). A file that cannot be opened for another reason (damaged,
 * from a newer DuckDB) is not held, and may be replaced.
 */
export async function ensureNotHeld(path: string): Promise<void> {
  let instance: DuckDBInstance;
  try {
    instance = await duckdb.DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  } catch (error) {
    const failure = lockError(path, error);
    if (failure instanceof StoreLockedError) throw failure;
    return;
  }
  instance.closeSync();
}
