/** Why the disk under the database refused a write, as far as DuckDB's message tells. */
export type StorageFaultReason = 'disk_full' | 'io_error' | 'fatal';

export interface StorageFault {
  reason: StorageFaultReason;
  /** Said to clients: the cause in a few words, without the file's path. */
  cause: string;
  /** DuckDB's own message, for the server's log only: it names the file. */
  detail: string;
}

const CAUSES: [RegExp, StorageFaultReason, string][] = [
  [/No space left on device|ENOSPC/, 'disk_full', 'the disk is full (ENOSPC)'],
  [/Input\/output error|EIO\b/, 'io_error', 'the disk failed to read or write (EIO)'],
  [/Disk quota exceeded|EDQUOT/, 'disk_full', 'the disk quota is used up (EDQUOT)'],
  [/File too large|EFBIG/, 'disk_full', 'the database file reached its size limit (EFBIG)'],
];

const messageOf = (error: unknown): string =>
  error instanceof Error ? error.message : String(error);

/**
 * DuckDB's fatal errors invalidate the whole database: every later statement, on every
 * connection, fails with "database has been invalidated" until the file is opened again.
 */
export function invalidatesDatabase(error: unknown): boolean {
  const message = messageOf(error);
  return message.startsWith('FATAL Error') || message.includes('database has been invalidated');
}

/** The fault of the disk behind a DuckDB error, or null for any other error. */
export function storageFaultOf(error: unknown): StorageFault | null {
  const detail = messageOf(error);
  for (const [pattern, reason, cause] of CAUSES) {
    if (pattern.test(detail)) return { reason, cause, detail };
  }
  return invalidatesDatabase(error) ? unknownFault(error) : null;
}

/** A fault DuckDB's message does not explain. */
export function unknownFault(error: unknown): StorageFault {
  return {
    reason: 'fatal',
    cause: 'DuckDB stopped after a fatal error (see the server log)',
    detail: messageOf(error),
  };
}
