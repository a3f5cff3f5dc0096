import type { StoreUnavailableError } from '../errors.js';
import { BackupCopies } from './backup-copy.js';
import { CHECKPOINT_LOG_BYTES, LogCheckpoints } from './checkpoints.js';
import { Connections, type StoreOptions } from './connections.js';
import { LiveRewrite, type RewriteSteps, removeUnfinishedRewrite } from './live-rewrite.js';
import { applyMigrations } from './migrations.js';
import { openFailure, Recovery } from './recovery.js';
import { Session } from './session.js';
import { TableCache } from './table-cache.js';
import { transaction, type Work } from './transaction.js';
import { WriteQueue } from './write-queue.js';

export { ensureNotHeld } from './lock-holder.js';

/**
 * The one DuckDB database of a process (design §1). Writes are serialised through a queue on a
 * single connection, each in its own transaction, because DuckDB connections must never run two
 * statements at once; replayable writes pass the queue (`writeReplayable`). Reads take one of a
 * few reader connections. Each job is a part of its own: the order of writes (`WriteQueue`), the
 * connections and the reader pool (`Connections`), what a failure means and reopening the file
 * after one (`Recovery`), the live rewrite (`LiveRewrite`), backup copies (`BackupCopies`) and
 * DuckDB's table cache (`TableCache`).
 */
export class Store {
  private readonly queue = new WriteQueue();
  private readonly recovery: Recovery;
  private readonly rewrite: LiveRewrite;
  private readonly copies: BackupCopies;
  private readonly tableCache: TableCache;
  private readonly logCheckpoints: LogCheckpoints;
  private readonly closingSteps: (() => Promise<void>)[] = [];
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly connections: Connections,
    options: StoreOptions,
  ) {
    this.recovery = new Recovery(this.queue, connections);
    this.rewrite = new LiveRewrite(path, this.queue, connections, this.recovery);
    this.copies = new BackupCopies(this.queue, connections, this.recovery);
    this.tableCache = new TableCache(connections, options.memoryLimit);
    this.logCheckpoints = new LogCheckpoints(
      path,
      options.checkpointThreshold ?? CHECKPOINT_LOG_BYTES,
      this.recovery,
    );
  }

  /** A full or failing disk is said as such, whichever DuckDB error it caused. */
  static async open(path: string, options: StoreOptions = {}): Promise<Store> {
    await removeUnfinishedRewrite(path);
    const connections = await Connections.open(path, options).catch((error) => {
      throw openFailure(path, error);
    });
    const store = new Store(path, connections, options);
    try {
      await applyMigrations(path, connections.writer, store);
    } catch (error) {
      await store.close();
      throw openFailure(path, error);
    }
    return store;
  }

  /** Why the database is unavailable, or null while it works (`/healthz`, `/readyz`). */
  unavailable(): StoreUnavailableError | null {
    return this.recovery.unavailable();
  }

  /** Called each time the store has reopened the database after DuckDB invalidated it. */
  onReopened(listener: () => void): void {
    this.recovery.onReopened(listener);
  }

  /**
   * Runs `work` in one transaction on the writer connection, after every earlier write. After the
   * commit, the log is checkpointed into the file when the write is `large` or the log holds more
   * than 16 MiB. DuckDB's own automatic checkpoint runs inside the COMMIT, before the
   * transaction's memory is freed; under a `memory_limit` it then failed to pin blocks, and a
   * failed checkpoint invalidates the database until the process restarts (seen ingesting 5M
   * events with 400MB). Rows not yet checkpointed stay in memory, since nothing spills, so a large
   * write such as an ingest batch is checkpointed at once, and then leaves DuckDB's cache of table
   * blocks empty (`releaseTableCache`). Whether a write is large may depend on what it did
   * (an ingest batch of a few events is not): `large` then tells from its result.
   */
  write<T>(
    work: Work<T>,
    options: { large?: boolean | ((result: T) => boolean) } = {},
  ): Promise<T> {
    return this.queue.inTurn(async () => {
      this.recovery.throwIfUnavailable();
      const result = await this.commit(work);
      const large =
        typeof options.large === 'function' ? options.large(result) : (options.large ?? false);
      await this.checkpointLog(large);
      // A checkpoint that failed may have invalidated the database; the write is committed.
      if (large && this.recovery.isAvailable) await this.tableCache.release();
      return result;
    });
  }

  /**
   * Runs `work` in one transaction on the writer connection as soon as the write running now is
   * done: it passes the writes queued before it, and a file rewrite that is copying the file. A
   * rewrite runs it again on its copy before the swap (with `cds_rewrite` as the default
   * database), so the swap does not bring back what it deleted: from the same rows it must write
   * the same rows, with no clock, random value or outside file read inside. For erasures, whose
   * answer must not wait for a rewrite of the whole file.
   */
  writeReplayable<T>(work: Work<T>): Promise<T> {
    return this.queue.onWriter(async () => {
      this.recovery.throwIfUnavailable();
      const result = await this.commit(work);
      // While a copy is made, DuckDB refuses to checkpoint, and the log goes with the old file.
      if (!this.rewrite.keepForReplay(work)) await this.checkpointLog(false);
      return result;
    });
  }

  async read<T>(work: Work<T>): Promise<T> {
    this.recovery.throwIfUnavailable();
    return this.connections.readers.withOne(async (connection) => {
      try {
        return await work(new Session(connection));
      } catch (error) {
        throw this.recovery.failedWith(error);
      }
    });
  }

  /**
   * Runs `work` on the writer connection between two writes, with no reader running and outside a
   * transaction, for what a transaction may not hold: checkpoints and snapshots.
   */
  exclusive<T>(work: Work<T>): Promise<T> {
    return this.queue.inTurn(async () => {
      // Readers wait too: the work may drop and recreate tables under them.
      this.recovery.throwIfUnavailable();
      return this.connections.readers.withAll(async () => {
        try {
          return await work(new Session(this.connections.writer));
        } catch (error) {
          throw this.recovery.failedWith(error);
        }
      });
    });
  }

  /** Checkpoints the log into the file, vacuuming the deleted rows. */
  async checkpoint(): Promise<void> {
    await this.exclusive(() => this.logCheckpoints.forced(this.connections.writer));
  }

  /** How many times the file was replaced by a copy since the store opened. */
  get rewrites(): number {
    return this.rewrite.rewrites;
  }

  /**
   * Replaces the database file with a fresh copy of its live data, so that no block of the file
   * keeps what was deleted; writes queued after it wait for the swap, replayable writes go on
   * (`LiveRewrite.replaceWithCopy`).
   */
  replaceWithCopy(steps: RewriteSteps = {}): Promise<void> {
    return this.rewrite.replaceWithCopy(steps);
  }

  /**
   * Copies the whole database as of one moment, the moment `firstRead` sees, into a new DuckDB
   * file at `path` (a backup), while writes and reads go on (`BackupCopies.copyTo`).
   */
  copyTo<T>(path: string, firstRead: Work<T>): Promise<T> {
    return this.copies.copyTo(path, firstRead);
  }

  /**
   * Evicts the blocks of the file DuckDB holds cached (`TableCache.release`); may run inside a
   * write, between two of its statements.
   */
  releaseTableCache(): Promise<void> {
    return this.tableCache.release();
  }

  /** `step` runs when the store closes, before it waits for the writes still queued. */
  whenClosing(step: () => Promise<void>): void {
    this.closingSteps.push(step);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.recovery.stop();
    for (const step of this.closingSteps) await step();
    await this.queue.drained();
    await this.copies.drained();
    this.connections.close();
  }

  /** `work` in one transaction on the writer connection, its failure said as the store's. */
  private commit<T>(work: Work<T>): Promise<T> {
    return transaction(this.connections.writer, work).catch((error: unknown) => {
      throw this.recovery.failedWith(error);
    });
  }

  private checkpointLog(always: boolean): Promise<void> {
    return this.logCheckpoints.afterWrite(this.connections.writer, always);
  }
}
