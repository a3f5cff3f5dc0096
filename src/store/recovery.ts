import { backoffMs } from '../backoff.js';
import { systemClock } from '../clock.js';
import { StoreUnavailableError } from '../errors.js';
import { componentLog } from '../telemetry/log.js';
import type { Connections } from './connections.js';
import { invalidatesDatabase, type StorageFault, storageFaultOf } from './storage-fault.js';
import type { WriteQueue } from './write-queue.js';

/** After DuckDB invalidated the database, the store tries to reopen it after growing pauses. */
const REOPEN_BACKOFF = { firstMs: 1000, longestMs: 30_000 };

/** Since when, and why, the database is unavailable. */
interface StoreFailure extends StorageFault {
  since: string;
  /** Attempts to reopen it that failed. */
  attempts: number;
}

/** A failure to open the file, said as a fault of its disk when it is one. */
export function openFailure(path: string, error: unknown): unknown {
  if (error instanceof StoreUnavailableError) {
    return StoreUnavailableError.atOpen(path, error.storageCause);
  }
  const fault = storageFaultOf(error);
  if (!fault) return error;
  componentLog('store').error(
    { path, cause: fault.cause, detail: fault.detail },
    'opening the database failed',
  );
  return StoreUnavailableError.atOpen(path, fault.cause);
}

/**
 * Whether the database works, and the way back when it does not: a statement that failed in a way
 * that invalidated the database (`failedWith`) makes the store unavailable, and the file is then
 * opened again after growing pauses until that works.
 */
export class Recovery {
  /** Null while the database works. */
  private failure: StoreFailure | null = null;
  private reopenTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly reopenListeners: (() => void)[] = [];

  constructor(
    private readonly queue: WriteQueue,
    private readonly connections: Connections,
  ) {}

  /** Why the database is unavailable, or null while it works. */
  unavailable(): StoreUnavailableError | null {
    const failure = this.failure;
    if (!failure) return null;
    return StoreUnavailableError.invalidated(failure.cause, {
      reason: failure.reason,
      since: failure.since,
      attempts: failure.attempts,
    });
  }

  get isAvailable(): boolean {
    return this.failure === null;
  }

  throwIfUnavailable(): void {
    const unavailable = this.unavailable();
    if (unavailable) throw unavailable;
  }

  /** Called each time the database has been opened again after DuckDB invalidated it. */
  onReopened(listener: () => void): void {
    this.reopenListeners.push(listener);
  }

  /**
   * What a failed statement means for the store. An error that invalidated the database marks the
   * store unavailable and starts reopening it; a write the disk refused without invalidating it
   * (a COMMIT that could not write the log) was rolled back, and is said as a fault of the disk.
   */
  failedWith(error: unknown): unknown {
    const fault = storageFaultOf(error);
    if (!fault) return error;
    if (!invalidatesDatabase(error))
      return StoreUnavailableError.writeFailed(fault.cause, fault.reason);
    this.invalidated(fault);
    return this.unavailable();
  }

  /** Marks the store unavailable for `fault`, unless it is already, and starts reopening it. */
  invalidated(fault: StorageFault): void {
    if (this.failure) return;
    // An operator reads `since` against the wall clock, as the store has no context of its own.
    this.failure = { ...fault, since: systemClock.now().toISOString(), attempts: 0 };
    componentLog('store').error(
      {
        cause: fault.cause,
        detail: fault.detail,
        max_retry_seconds: REOPEN_BACKOFF.longestMs / 1000,
      },
      `the database is unavailable: ${fault.cause}; reopening it once it can, trying after growing pauses`,
    );
    this.scheduleReopen();
  }

  /** No attempt to reopen the database starts after this (the store is closing). */
  stop(): void {
    this.stopped = true;
    if (this.reopenTimer) clearTimeout(this.reopenTimer);
  }

  private scheduleReopen(): void {
    const attempts = this.failure?.attempts ?? 0;
    const delayMs = backoffMs(attempts + 1, REOPEN_BACKOFF);
    this.reopenTimer = setTimeout(() => {
      this.reopenTimer = null;
      this.reopen().catch(() => undefined);
    }, delayMs);
    // A process with nothing else to do may end meanwhile (a one-off command).
    this.reopenTimer.unref();
  }

  /**
   * Opens the file again, which replays DuckDB's log, and checkpoints the log into the file:
   * until that works, the disk still refuses what the failed checkpoint wrote, and the store stays
   * unavailable rather than fail again at the next write.
   */
  private reopen(): Promise<void> {
    return this.queue.inTurn(() => this.reopenNow());
  }

  private async reopenNow(): Promise<void> {
    const failure = this.failure;
    if (this.stopped || !failure) return;
    try {
      await this.connections.reconnect();
      await this.connections.writer.run('CHECKPOINT');
    } catch (error) {
      const fault = storageFaultOf(error);
      if (fault && fault.cause !== failure.cause) {
        componentLog('store').error(
          { cause: fault.cause, detail: fault.detail },
          `the database is still unavailable: ${fault.cause}`,
        );
      }
      this.failure = { ...failure, ...(fault ?? {}), attempts: failure.attempts + 1 };
      this.scheduleReopen();
      return;
    }
    this.failure = null;
    componentLog('store').info(
      { attempts: failure.attempts + 1, since: failure.since },
      'the database is open again',
    );
    for (const listener of this.reopenListeners) listener();
  }
}
