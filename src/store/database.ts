import { readFileSync } from 'node:fs';
import { chmod, rename, rm, stat } from 'node:fs/promises';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { StoreLockedError } from '../errors.js';
import { traced } from '../trace.js';
import { PRIVATE_FILE_MODE } from './file-modes.js';
import { Session } from './session.js';
import { type Migration, migrations, sqlStringLiteral } from './sql-files.js';

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
  onStart?: () => void;
  beforeSwap?: (session: Session) => Promise<void>;
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
    instance = await DuckDBInstance.fromCache(path, {
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

/**
 * The one DuckDB database of a process (design §1). Writes are serialised through a queue on a
 * single connection, each in its own transaction, because DuckDB connections must never run two
 * statements at once; reads take one of a few reader connections.
 */
export class Store {
  private writeTail: Promise<unknown> = Promise.resolve();
  private readonly idleReaders: DuckDBConnection[] = [];
  private readonly waitingReaders: ((connection: DuckDBConnection) => void)[] = [];
  private closed = false;
  /** The limit `releaseTableCache` puts back. */
  private fullMemoryLimit: string | undefined;

  private constructor(
    readonly path: string,
    private readonly options: StoreOptions,
    private instance: DuckDBInstance,
    private writer: DuckDBConnection,
    readers: DuckDBConnection[],
  ) {
    this.idleReaders.push(...readers);
  }

  static async open(path: string, options: StoreOptions = {}): Promise<Store> {
    // A copy left by a rewrite that was cut off before its swap (`replaceWithCopy`).
    await removeDatabaseFile(rewriteCopyPath(path));
    const { instance, writer, readers } = await connectTo(path, options);
    const store = new Store(path, options, instance, writer, readers);
    await store.migrate();
    return store;
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
  write<T>(work: (session: Session) => Promise<T>, options: { large?: boolean } = {}): Promise<T> {
    const run = async (): Promise<T> => {
      await this.writer.run('BEGIN TRANSACTION');
      let result: T;
      try {
        result = await work(new Session(this.writer));
        await this.writer.run('COMMIT');
      } catch (error) {
        await this.writer.run('ROLLBACK');
        throw error;
      }
      await this.checkpointLog(options.large ?? false);
      if (options.large) await this.releaseTableCache();
      return result;
    };
    return this.enqueue(run);
  }

  async read<T>(work: (session: Session) => Promise<T>): Promise<T> {
    const connection = await this.acquireReader();
    try {
      return await work(new Session(connection));
    } finally {
      this.releaseReader(connection);
    }
  }

  /**
   * Runs `work` on the writer connection between two writes, with no reader running and outside a
   * transaction, for what a transaction may not hold: checkpoints and the rewrite after an erasure.
   */
  exclusive<T>(work: (session: Session) => Promise<T>): Promise<T> {
    const run = async (): Promise<T> => {
      // Readers wait too: the work may drop and recreate tables under them.
      const readers = await this.acquireAllReaders();
      try {
        return await work(new Session(this.writer));
      } finally {
        for (const reader of readers) this.releaseReader(reader);
      }
    };
    return this.enqueue(run);
  }

  /**
   * Replaces the database file with a fresh copy of its live data, so that no block of the file
   * keeps what was deleted (design §15): DuckDB leaves deleted rows in their blocks and packs small
   * segments of many tables into shared blocks, so no checkpoint clears them. Writes wait for the
   * copy; reads go on until the swap itself, which waits for them. The copy is renamed over the
   * file once complete, so a crash leaves either the old file or the new one, never half of one.
   * `onStart` runs when the rewrite leaves the write queue; `beforeSwap` may write to the finished
   * copy, attached as `cds_rewrite`, what holds only once it replaces the file.
   */
  replaceWithCopy(steps: RewriteSteps = {}): Promise<void> {
    const run = async (): Promise<void> => {
      steps.onStart?.();
      const copy = rewriteCopyPath(this.path);
      await removeDatabaseFile(copy);
      const session = new Session(this.writer);
      await session.runText('FORCE CHECKPOINT');
      await session.runText(`ATTACH ${sqlStringLiteral(copy)} AS cds_rewrite`);
      try {
        await session.run('store_copy_to_rewrite');
        if (steps.beforeSwap) {
          await steps.beforeSwap(session);
          await session.run('store_checkpoint_rewrite');
        }
      } catch (error) {
        await session.run('store_detach_rewrite');
        await removeDatabaseFile(copy);
        throw error;
      }
      await session.run('store_detach_rewrite');
      await rm(`${copy}.wal`, { force: true });
      // DuckDB creates the copy with the process's umask, which only the CLI sets.
      await chmod(copy, PRIVATE_FILE_MODE);
      const readers = await this.acquireAllReaders();
      this.disconnect(readers);
      // Nothing was written since the checkpoint, so the WAL holds nothing the copy lacks.
      await rm(`${this.path}.wal`, { force: true });
      await rename(copy, this.path);
      const reopened = await connectTo(this.path, this.options);
      this.instance = reopened.instance;
      this.writer = reopened.writer;
      for (const reader of reopened.readers) this.releaseReader(reader);
    };
    return this.enqueue(run);
  }

  /**
   * The write it follows is committed whatever happens here, so a failed checkpoint is reported,
   * not thrown: the log stays, and the next write or closing the store checkpoints again.
   */
  private async checkpointLog(always: boolean): Promise<void> {
    const log = await stat(`${this.path}.wal`).catch(() => null);
    if (!log || (!always && log.size <= CHECKPOINT_WAL_BYTES)) return;
    await traced('checkpoint', () => this.writer.run('CHECKPOINT')).catch((error: unknown) => {
      process.stderr.write(`checkpoint after a write failed: ${(error as Error).message}\n`);
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

  async checkpoint(): Promise<void> {
    await this.exclusive((session) => session.runText('FORCE CHECKPOINT'));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.writeTail;
    this.disconnect(this.idleReaders.splice(0));
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
    for (const migration of migrations()) {
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
