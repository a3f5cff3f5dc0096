import { readFileSync } from 'node:fs';
import { chmod, rename, rm, stat } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { DatabaseTooNewError, StoreLockedError, StoreUnavailableError } from '../errors.js';
import { componentLog } from '../telemetry/log.js';
import { traced } from '../trace.js';
import { PRIVATE_FILE_MODE } from './file-modes.js';
import { Session } from './session.js';
import { type Migration, migrations, sqlStringLiteral } from './sql-files.js';
import {
  invalidatesDatabase,
  type StorageFault,
  storageFaultOf,
  unknownFault,
} from './storage-fault.js';

/**
 * Required, not imported: imported from ESM, Node scans each of the package's hundred CommonJS
 * files for the names it exports (cjs-module-lexer), which doubled its load time at every start.
 */
const duckdb = createRequire(import.meta.url)(
  '@duckdb/node-api',
) as typeof import('@duckdb/node-api');

const LOCK_HOLDER = /Conflicting lock is held in (.+?) \(PID (\d+)\)/;

function commandOf(pid: number, fallback: string): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    return argv.join(' ') || fallback;
  } catch {
    return fallback;
  }
}

function lockError(path: string, error: unknown): Error {
  const message = error instanceof Error ? error.message : String(error);
  if (!message.includes('Could not set lock')) return error as Error;
  const match = LOCK_HOLDER.exec(message);
  const pid = match ? Number(match[2]) : null;
  return new StoreLockedError(
    path,
    pid === null ? null : { pid, command: commandOf(pid, match?.[1] ?? 'unknown') },
  );
}

/** A failure to open the file, said as a fault of its disk when it is one. */
function openFailure(path: string, error: unknown): unknown {
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

const READERS = 4;

/** The table blocks DuckDB may keep cached when its table cache is released. */
const TABLE_CACHE_FLOOR_BYTES = 32 * 1024 * 1024;

/** DuckDB's own default for its automatic checkpoint, which the store takes over (`write`). */
const CHECKPOINT_WAL_BYTES = 16 * 1024 * 1024;

export interface StoreOptions {
  memoryLimit?: string;
}

/** What a caller of `Store.replaceWithCopy` adds to the rewrite. */
export interface RewriteSteps {
  /** In the copy's transaction, right after the copy: `cds_rewrite` holds its snapshot. */
  inCopy?: (session: Session) => Promise<void>;
  /** After the copy is committed, while writes go on; for what the swap must not come before. */
  beforeSwap?: (session: Session) => Promise<void>;
}

type Work<T> = (session: Session) => Promise<T>;

/** After DuckDB invalidated the database, the store tries to reopen it after this… */
const REOPEN_FIRST_DELAY_MS = 1000;
/** …doubling each failed attempt up to this. */
const REOPEN_MAX_DELAY_MS = 30_000;

/** Since when, and why, the database is unavailable; null while it works. */
export interface StoreFailure extends StorageFault {
  since: string;
  /** Attempts to reopen it that failed. */
  attempts: number;
}

const rewriteCopyPath = (path: string) => `${path}.rewrite`;

async function removeDatabaseFile(path: string): Promise<void> {
  await Promise.all([rm(path, { force: true }), rm(`${path}.wal`, { force: true })]);
}

/**
 * Opens the file with spilling turned off: ingest's temporary tables hold identifier values
 * until they are keyed, and a spill would write them to disk beside the database. A query that
 * needs more than `memoryLimit` (DuckDB's buffer pool; default 80% of RAM) then fails instead,
 * and its transaction rolls back.
 */
async function connectTo(path: string, options: StoreOptions) {
  let instance: DuckDBInstance;
  try {
    instance = await duckdb.DuckDBInstance.fromCache(path, {
      temp_directory: '',
      // Never inside a COMMIT: the store checkpoints after it (`Store.write`).
      checkpoint_threshold: '1TB',
      ...(options.memoryLimit ? { memory_limit: options.memoryLimit } : {}),
    });
  } catch (error) {
    throw lockError(path, error);
  }
  const writer = await instance.connect();
  const readers = await Promise.all(Array.from({ length: READERS }, () => instance.connect()));
  return { instance, writer, readers };
}

/** `work` in one transaction on `connection`, rolled back if it throws. */
async function transaction<T>(connection: DuckDBConnection, work: Work<T>): Promise<T> {
  await connection.run('BEGIN TRANSACTION');
  try {
    const result = await work(new Session(connection));
    await connection.run('COMMIT');
    return result;
  } catch (error) {
    // A COMMIT that failed was rolled back by DuckDB already, and an invalidated database
    // refuses the ROLLBACK too: its "no transaction is active" would hide the cause.
    await connection.run('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * The one DuckDB database of a process (design §1). Writes are serialised through a queue on a
 * single connection, each in its own transaction, because DuckDB connections must never run two
 * statements at once; replayable writes pass the queue (`writeReplayable`). Reads take one of a
 * few reader connections.
 */
export class Store {
  /** Writes in the order they were asked for, and file rewrites among them. */
  private writeTail: Promise<unknown> = Promise.resolve();
  /** The writer connection, one transaction at a time (`onWriter`). */
  private writerTail: Promise<unknown> = Promise.resolve();
  /**
   * While a rewrite copies the file: the replayable writes committed since the copy's snapshot,
   * to run again on the copy before the swap (`writeReplayable`).
   */
  private replaysForCopy: Work<unknown>[] | null = null;
  /** File rewrites completed since the store opened. */
  private completedRewrites = 0;
  private readonly closingSteps: (() => Promise<void>)[] = [];
  private readonly idleReaders: DuckDBConnection[] = [];
  private readonly waitingReaders: ((connection: DuckDBConnection) => void)[] = [];
  private closed = false;
  /** The limit `releaseTableCache` puts back. */
  private fullMemoryLimit: string | undefined;
  /** False between closing the connections and opening them again (`reconnect`). */
  private connected = true;
  private failure: StoreFailure | null = null;
  private reopenTimer: NodeJS.Timeout | null = null;
  private readonly reopenListeners: (() => void)[] = [];
  /** Copies under way (`copyTo`): the file must not be swapped or closed under them. */
  private readonly runningCopies = new Set<Promise<unknown>>();
  /** One copy at a time: each attaches its file under the same name. */
  private copyTail: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly path: string,
    private readonly options: StoreOptions,
    private instance: DuckDBInstance,
    private writer: DuckDBConnection,
    readers: DuckDBConnection[],
  ) {
    this.idleReaders.push(...readers);
  }

  /** A full or failing disk is said as such, whichever DuckDB error it caused. */
  static async open(path: string, options: StoreOptions = {}): Promise<Store> {
    // A copy left by a rewrite that was cut off before its swap (`replaceWithCopy`).
    await removeDatabaseFile(rewriteCopyPath(path));
    const { instance, writer, readers } = await connectTo(path, options).catch((error) => {
      throw openFailure(path, error);
    });
    const store = new Store(path, options, instance, writer, readers);
    try {
      await store.migrate();
    } catch (error) {
      await store.close();
      throw openFailure(path, error);
    }
    return store;
  }

  /** Why the database is unavailable, or null while it works (`/healthz`, `/readyz`). */
  unavailable(): StoreUnavailableError | null {
    const failure = this.failure;
    if (!failure) return null;
    return StoreUnavailableError.invalidated(failure.cause, {
      reason: failure.reason,
      since: failure.since,
      attempts: failure.attempts,
    });
  }

  /** Called each time the store has reopened the database after DuckDB invalidated it. */
  onReopened(listener: () => void): void {
    this.reopenListeners.push(listener);
  }

  /**
   * Runs `work` in one transaction on the writer connection, after every earlier write. After the
   * commit, the log is checkpointed into the file when the write is `large` or the log holds more
   * than 16 MiB. DuckDB's own automatic checkpoint runs inside the COMMIT, before the
   * transaction's memory is freed; under a `memory_limit` it then failed to pin blocks, and a
   * failed checkpoint invalidates the database until the process restarts (seen ingesting 5M
   * events with 400MB). Rows not yet checkpointed stay in memory, since nothing spills, so a large
   * write such as an ingest batch is checkpointed at once, and then leaves DuckDB's cache of table
   * blocks empty (`releaseTableCache`).
   */
  write<T>(work: Work<T>, options: { large?: boolean } = {}): Promise<T> {
    const run = async (): Promise<T> => {
      this.throwIfUnavailable();
      const result = await transaction(this.writer, work).catch((error: unknown) => {
        throw this.failedWith(error);
      });
      await this.checkpointLog(options.large ?? false);
      // A checkpoint that failed may have invalidated the database; the write is committed.
      if (options.large && !this.failure) await this.releaseTableCache();
      return result;
    };
    return this.enqueue(() => this.onWriter(run));
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
    return this.onWriter(async () => {
      this.throwIfUnavailable();
      const result = await transaction(this.writer, work).catch((error: unknown) => {
        throw this.failedWith(error);
      });
      // While a copy is made, DuckDB refuses to checkpoint, and the log goes with the old file.
      if (this.replaysForCopy) this.replaysForCopy.push(work);
      else await this.checkpointLog(false);
      return result;
    });
  }

  async read<T>(work: (session: Session) => Promise<T>): Promise<T> {
    this.throwIfUnavailable();
    const connection = await this.acquireReader();
    try {
      return await work(new Session(connection));
    } catch (error) {
      throw this.failedWith(error);
    } finally {
      this.releaseReader(connection);
    }
  }

  /**
   * Runs `work` on the writer connection between two writes, with no reader running and outside a
   * transaction, for what a transaction may not hold: checkpoints and snapshots.
   */
  exclusive<T>(work: Work<T>): Promise<T> {
    const run = async (): Promise<T> => {
      // Readers wait too: the work may drop and recreate tables under them.
      this.throwIfUnavailable();
      const readers = await this.acquireAllReaders();
      try {
        return await work(new Session(this.writer));
      } catch (error) {
        throw this.failedWith(error);
      } finally {
        for (const reader of readers) this.releaseReader(reader);
      }
    };
    return this.enqueue(() => this.onWriter(run));
  }

  /** How many times the file was replaced by a copy since the store opened. */
  get rewrites(): number {
    return this.completedRewrites;
  }

  /**
   * Replaces the database file with a fresh copy of its live data, so that no block of the file
   * keeps what was deleted (design §15): DuckDB leaves deleted rows in their blocks and packs small
   * segments of many tables into shared blocks, so no checkpoint clears them. The copy is made on
   * a connection of its own from one snapshot of the file, taken between two writes; writes
   * queued after the rewrite wait for it, while replayable writes (`writeReplayable`) go on and
   * run again on the copy before the swap. Reads go on until the swap itself, which waits for
   * them. The copy is renamed over the file once complete, so a crash leaves either the old file
   * or the new one, never half of one.
   */
  replaceWithCopy(steps: RewriteSteps = {}): Promise<void> {
    const run = async (): Promise<void> => {
      this.throwIfUnavailable();
      const copy = rewriteCopyPath(this.path);
      await removeDatabaseFile(copy);
      const connection = await this.instance.connect();
      const session = new Session(connection);
      await session.runText(`ATTACH ${sqlStringLiteral(copy)} AS cds_rewrite`);
      try {
        await this.copyInto(session, steps);
        await steps.beforeSwap?.(session);
        await this.replayOnCopy(connection);
        // Into the copy's file while reads and writes go on; the swap checkpoints only what came
        // after this.
        await session.run('store_checkpoint_rewrite');
        await this.swapIn(connection, copy);
      } catch (error) {
        this.replaysForCopy = null;
        await session.run('store_detach_rewrite').catch(() => undefined);
        connection.closeSync();
        await removeDatabaseFile(copy);
        throw this.failedWith(error);
      }
    };
    return this.enqueue(run);
  }

  /**
   * Copies the whole database as of one moment into a new DuckDB file at `path` (a backup): every
   * table, view, sequence, index and constraint, live rows only, so the file opens as a cds
   * database with its migrations, and keeps nothing an erasure deleted. The moment is taken between
   * two writes; the copy then reads it in a transaction of its own on a connection of its own
   * while writes and reads go on. `firstRead` runs first in that transaction and so sees the same
   * moment (DuckDB fixes a transaction's snapshot at its first read). A rewrite's swap and closing
   * the store wait for the copy, as they close the connections of the file it reads.
   */
  copyTo<T>(path: string, firstRead: Work<T>): Promise<T> {
    const previous = this.copyTail;
    const started = this.enqueue(async () => {
      // One copy at a time, as each attaches its file under the same name: a second asked for
      // while one runs holds the writes queued after it until the first is done.
      await previous;
      return this.onWriter(async () => {
        this.throwIfUnavailable();
        const connection = await this.instance.connect();
        const session = new Session(connection);
        try {
          await session.runText(`ATTACH ${sqlStringLiteral(path)} AS cds_backup`);
          await session.runText('BEGIN TRANSACTION');
          const read = await firstRead(session);
          const copied = this.finishCopy(connection, read);
          this.runningCopies.add(copied);
          void copied.finally(() => this.runningCopies.delete(copied)).catch(() => undefined);
          // Wrapped, so the queue goes on without waiting for the copy.
          return { copied };
        } catch (error) {
          await session.run('store_detach_backup').catch(() => undefined);
          connection.closeSync();
          throw this.failedWith(error);
        }
      });
    });
    const result = started.then(({ copied }) => copied);
    this.copyTail = result.catch(() => undefined);
    return result;
  }

  private async finishCopy<T>(connection: DuckDBConnection, read: T): Promise<T> {
    const session = new Session(connection);
    try {
      await session.run('store_copy_to_backup');
      await session.runText('COMMIT');
      await session.run('store_detach_backup');
      return read;
    } catch (error) {
      await session.runText('ROLLBACK').catch(() => undefined);
      await session.run('store_detach_backup').catch(() => undefined);
      throw this.failedWith(error);
    } finally {
      connection.closeSync();
    }
  }

  /** The copy, from a snapshot taken while no write runs, in one transaction. */
  private async copyInto(session: Session, steps: RewriteSteps): Promise<void> {
    await this.onWriter(async () => {
      await session.runText('BEGIN TRANSACTION');
      // DuckDB takes a transaction's snapshot when it first reads the database.
      await session.run('store_take_snapshot');
      this.replaysForCopy = [];
    });
    try {
      await session.run('store_copy_to_rewrite');
      await steps.inCopy?.(session);
      await session.runText('COMMIT');
    } catch (error) {
      await session.runText('ROLLBACK');
      throw error;
    }
  }

  /**
   * Runs on the copy, in the order they committed, the replayable writes it does not have yet;
   * answers whether there were any.
   */
  private async replayOnCopy(connection: DuckDBConnection): Promise<boolean> {
    if (!this.replaysForCopy?.length) return false;
    const session = new Session(connection);
    await session.run('store_use_rewrite');
    try {
      for (;;) {
        const replays = this.replaysForCopy?.splice(0) ?? [];
        if (replays.length === 0) return true;
        for (const work of replays) await transaction(connection, work);
      }
    } finally {
      await session.run('store_use_live');
    }
  }

  /**
   * Once no write runs, then no read (the writer first: reads are short, and an erasure waiting
   * for its turn would hold every read up): the last replays, then the swap. The log of the old
   * file holds only writes the copy has, so it goes with the file.
   */
  private async swapIn(connection: DuckDBConnection, copy: string): Promise<void> {
    await this.onWriter(async () => {
      const session = new Session(connection);
      const replayed = await this.replayOnCopy(connection);
      this.replaysForCopy = null;
      if (replayed) await session.run('store_checkpoint_rewrite');
      await session.run('store_detach_rewrite');
      connection.closeSync();
      await rm(`${copy}.wal`, { force: true });
      // DuckDB creates the copy with the process's umask, which only the CLI sets.
      await chmod(copy, PRIVATE_FILE_MODE);
      await this.reconnect(async () => {
        await rm(`${this.path}.wal`, { force: true });
        await rename(copy, this.path);
      }).catch((error: unknown) => {
        // Without connections nothing works until the file opens again: reopening starts.
        this.invalidated(storageFaultOf(error) ?? unknownFault(error));
        throw this.unavailable();
      });
      this.completedRewrites++;
    });
  }

  /**
   * Closes every connection and the instance once the reads under way are done, runs
   * `whileClosed`, and opens the file again. Opening may fail (the disk still full): the store
   * then stays without connections until a later call opens them.
   */
  private async reconnect(whileClosed: () => Promise<void> = async () => undefined): Promise<void> {
    await Promise.allSettled(this.runningCopies);
    if (this.connected) {
      const readers = await this.acquireAllReaders();
      this.disconnect(readers);
      this.connected = false;
    }
    await whileClosed();
    const reopened = await connectTo(this.path, this.options);
    this.instance = reopened.instance;
    this.writer = reopened.writer;
    this.connected = true;
    for (const reader of reopened.readers) this.releaseReader(reader);
  }

  private throwIfUnavailable(): void {
    const unavailable = this.unavailable();
    if (unavailable) throw unavailable;
  }

  /**
   * What a failed statement means for the store. An error that invalidated the database marks the
   * store unavailable and starts reopening it; a write the disk refused without invalidating it
   * (a COMMIT that could not write the log) was rolled back, and is said as a fault of the disk.
   */
  private failedWith(error: unknown): unknown {
    const fault = storageFaultOf(error);
    if (!fault) return error;
    if (!invalidatesDatabase(error))
      return StoreUnavailableError.writeFailed(fault.cause, fault.reason);
    this.invalidated(fault);
    return this.unavailable();
  }

  private invalidated(fault: StorageFault): void {
    if (this.failure) return;
    this.failure = { ...fault, since: new Date().toISOString(), attempts: 0 };
    componentLog('store').error(
      { cause: fault.cause, detail: fault.detail, max_retry_seconds: REOPEN_MAX_DELAY_MS / 1000 },
      `the database is unavailable: ${fault.cause}; reopening it once it can, trying after growing pauses`,
    );
    this.scheduleReopen();
  }

  private scheduleReopen(): void {
    const attempts = this.failure?.attempts ?? 0;
    const delayMs = Math.min(REOPEN_FIRST_DELAY_MS * 2 ** attempts, REOPEN_MAX_DELAY_MS);
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
    return this.enqueue(() => this.onWriter(() => this.reopenNow()));
  }

  private async reopenNow(): Promise<void> {
    const failure = this.failure;
    if (this.closed || !failure) return;
    try {
      await this.reconnect();
      await this.writer.run('CHECKPOINT');
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

  /**
   * The write it follows is committed whatever happens here, so a failed checkpoint is reported,
   * not thrown: the log stays, and the next write or closing the store checkpoints again.
   */
  private async checkpointLog(always: boolean): Promise<void> {
    const log = await stat(`${this.path}.wal`).catch(() => null);
    if (!log || (!always && log.size <= CHECKPOINT_WAL_BYTES)) return;
    await traced('checkpoint', () => this.writer.run('CHECKPOINT')).catch((error: unknown) => {
      // An invalidated database is reported by `invalidated`, which starts reopening it.
      if (invalidatesDatabase(error)) this.failedWith(error);
      else componentLog('store').error({ err: error }, 'checkpoint after a write failed');
    });
  }

  /**
   * Evicts the blocks of the file DuckDB holds cached. DuckDB keeps each block it wrote or read
   * until its `memory_limit` (80% of RAM when unset) runs out, so across ingest batches the cache
   * grew with the database: 640 MiB of table blocks after 5M events, most never read again, and
   * within a batch the stored tables it scanned sat beside its own temporary tables. Lowering the
   * limit to what DuckDB holds besides them is DuckDB's way to evict them; what is read again
   * comes back from the operating system's page cache (what it costs: docs/decisions.md, Memory
   * and spilling). It may run inside a write, between two of its statements. Readers wait
   * meanwhile: under the low limit a query of theirs could fail for want of memory.
   */
  async releaseTableCache(): Promise<void> {
    const session = new Session(this.writer);
    // One row always: sums over duckdb_memory().
    const memoryHeld = async () =>
      (await session.one('store_memory_held')) as { cached: number; held: number };
    // Little cached, nothing to do: readers are not stopped after every small batch of `serve`.
    if ((await memoryHeld()).cached <= TABLE_CACHE_FLOOR_BYTES) return;
    const readers = await this.acquireAllReaders();
    try {
      // Set back explicitly: RESET shows DuckDB's default again but leaves the buffer pool at the
      // low limit (DuckDB 1.5.5). The default is read once, as DuckDB prints it rounded down: read
      // again each time, it would shrink by a rounding step each batch.
      this.fullMemoryLimit ??=
        this.options.memoryLimit ??
        ((await session.one<{ memory_limit: string }>('store_memory_limit'))
          ?.memory_limit as string);
      const floor = (await memoryHeld()).held + TABLE_CACHE_FLOOR_BYTES;
      await this.writer.run(`SET memory_limit = '${floor}B'`).catch(() => {
        // Whatever could not be evicted stays; the limit is put back all the same.
      });
      await this.writer.run(`SET memory_limit = ${sqlStringLiteral(this.fullMemoryLimit)}`);
    } finally {
      for (const reader of readers) this.releaseReader(reader);
    }
  }

  /** Runs after everything queued before it, whether that succeeded or not. */
  private enqueue<T>(run: () => Promise<T>): Promise<T> {
    const result = this.writeTail.then(run, run);
    this.writeTail = result.catch(() => undefined);
    return result;
  }

  /** Runs when the writer connection is free: DuckDB runs one statement at a time on it. */
  private onWriter<T>(run: () => Promise<T>): Promise<T> {
    const result = this.writerTail.then(run, run);
    this.writerTail = result.catch(() => undefined);
    return result;
  }

  async checkpoint(): Promise<void> {
    await this.exclusive((session) => session.runText('FORCE CHECKPOINT'));
  }

  /** `step` runs when the store closes, before it waits for the writes still queued. */
  whenClosing(step: () => Promise<void>): void {
    this.closingSteps.push(step);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.reopenTimer) clearTimeout(this.reopenTimer);
    for (const step of this.closingSteps) await step();
    await this.writeTail;
    await this.writerTail;
    await this.copyTail;
    if (this.connected) this.disconnect(this.idleReaders.splice(0));
  }

  private disconnect(readers: DuckDBConnection[]): void {
    this.writer.closeSync();
    for (const reader of readers) reader.closeSync();
    this.instance.closeSync();
  }

  /** Every reader connection, once the reads running on them are done. */
  private acquireAllReaders(): Promise<DuckDBConnection[]> {
    return Promise.all(Array.from({ length: READERS }, () => this.acquireReader()));
  }

  private acquireReader(): Promise<DuckDBConnection> {
    const connection = this.idleReaders.pop();
    if (connection) return Promise.resolve(connection);
    return new Promise((resolve) => this.waitingReaders.push(resolve));
  }

  private releaseReader(connection: DuckDBConnection): void {
    const waiting = this.waitingReaders.shift();
    if (waiting) waiting(connection);
    else this.idleReaders.push(connection);
  }

  private async migrate(): Promise<void> {
    await this.writer.run(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT now())',
    );
    const applied = await this.read((session) =>
      session.allText<{ version: number }>('SELECT version FROM schema_migrations'),
    );
    const done = new Set(applied.map((row) => row.version));
    const known = migrations();
    const newestKnown = Math.max(0, ...known.map((migration) => migration.version));
    const newestApplied = Math.max(0, ...done);
    // Before any migration runs: a newer cds's tables are not this one's to change.
    if (newestApplied > newestKnown) {
      throw new DatabaseTooNewError(this.path, newestApplied, newestKnown);
    }
    for (const migration of known) {
      if (!done.has(migration.version)) await this.applyMigration(migration);
    }
  }

  private applyMigration(migration: Migration): Promise<void> {
    return this.write(async (session) => {
      await session.runText(migration.text);
      await session.runText(
        'INSERT INTO schema_migrations (version, name) VALUES ($version, $name)',
        {
          version: migration.version,
          name: migration.name,
        },
      );
    });
  }
}
