import { existsSync } from 'node:fs';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { duckdb } from './duckdb.js';
import { lockError } from './lock-holder.js';
import { ReaderPool } from './reader-pool.js';

const READERS = 4;
/** Keys of a join's build side pushed into its probe's scan as a list (see `connectTo`). */
const DYNAMIC_FILTER_KEYS = 2048;

export interface StoreOptions {
  memoryLimit?: string;
  /** Bytes of DuckDB's log after which a write is checkpointed (`checkpoint_threshold`). */
  checkpointThreshold?: number;
}

/**
 * Opens the file with spilling turned off: ingest's temporary tables hold identifier values
 * until they are keyed, and a spill would write them to disk beside the database. A query that
 * needs more than `memoryLimit` (DuckDB's buffer pool; default 80% of RAM) then fails instead,
 * and its transaction rolls back.
 */
async function connectTo(path: string, options: StoreOptions) {
  const replaysLog = existsSync(`${path}.wal`);
  let instance: DuckDBInstance;
  try {
    instance = await duckdb.DuckDBInstance.fromCache(path, {
      temp_directory: '',
      // Never inside a COMMIT: the store checkpoints after it (`Store.write`).
      checkpoint_threshold: '1TB',
      // A join whose build side holds up to this many keys gives the probe's scan their list,
      // which prunes it to the row groups and vectors that can hold them (DuckDB's default, 50,
      // is fewer rows than a live batch touches). A batch takes its stored rows back by rowid
      // (metrics_take_touched_rows): 600 of 650k rows in 61 ms, 60 in 17 ms, against 72 ms for
      // either at 50, which reads every row of the table.
      dynamic_or_filter_threshold: String(DYNAMIC_FILTER_KEYS),
      // Deleted rows are vacuumed by one checkpoint in several, not by each (`LogCheckpoints`).
      max_vacuum_tasks: '0',
      ...(options.memoryLimit ? { memory_limit: options.memoryLimit } : {}),
    });
  } catch (error) {
    throw lockError(path, error);
  }
  const writer = await instance.connect();
  // DuckDB 1.5 replays a log left by a process that did not close the file, but an index it
  // does not touch before the next checkpoint is written without the replayed rows: a token
  // looked up through tokens_by_lookup was then unknown (401) while a scan found it. Checkpointed
  // at once, the replayed rows reach the index with the table.
  if (replaysLog) await writer.run('CHECKPOINT');
  const readers = await Promise.all(Array.from({ length: READERS }, () => instance.connect()));
  return { instance, writer, readers };
}

/**
 * The open database file: DuckDB's instance, the one writer connection and the pool of reader
 * connections. Opening the file again (`reconnect`) replaces them all, so the writer is asked for
 * each time it is used, never kept.
 */
export class Connections {
  readonly readers = new ReaderPool(READERS);
  /** False between closing the connections and opening them again (`reconnect`). */
  private connected = true;
  /** Work on connections of its own (backup copies): the file must not be closed under it. */
  private readonly holders = new Set<Promise<unknown>>();

  private constructor(
    private readonly path: string,
    private readonly options: StoreOptions,
    private instance: DuckDBInstance,
    private writerConnection: DuckDBConnection,
    readers: DuckDBConnection[],
  ) {
    for (const reader of readers) this.readers.release(reader);
  }

  static async open(path: string, options: StoreOptions): Promise<Connections> {
    const { instance, writer, readers } = await connectTo(path, options);
    return new Connections(path, options, instance, writer, readers);
  }

  /** The connection every write runs on, one transaction at a time (`WriteQueue`). */
  get writer(): DuckDBConnection {
    return this.writerConnection;
  }

  /** A connection of its own, for work that goes on beside the writer and the readers. */
  connect(): Promise<DuckDBConnection> {
    return this.instance.connect();
  }

  /** `work` runs on a connection of its own (`connect`): `reconnect` waits for it to settle. */
  holdOpenFor(work: Promise<unknown>): void {
    this.holders.add(work);
    void work.finally(() => this.holders.delete(work)).catch(() => undefined);
  }

  /**
   * Closes every connection and the instance once the reads under way are done, runs
   * `whileClosed`, and opens the file again. Opening may fail (the disk still full): the store
   * then stays without connections until a later call opens them.
   */
  async reconnect(whileClosed: () => Promise<void> = async () => undefined): Promise<void> {
    await Promise.allSettled(this.holders);
    if (this.connected) {
      const readers = await this.readers.acquireAll();
      this.disconnect(readers);
      this.connected = false;
    }
    await whileClosed();
    const reopened = await connectTo(this.path, this.options);
    this.instance = reopened.instance;
    this.writerConnection = reopened.writer;
    this.connected = true;
    for (const reader of reopened.readers) this.readers.release(reader);
  }

  /** Closes the writer, the readers no read holds, and the instance, if they are open. */
  close(): void {
    if (this.connected) this.disconnect(this.readers.takeIdle());
  }

  private disconnect(readers: DuckDBConnection[]): void {
    this.writerConnection.closeSync();
    for (const reader of readers) reader.closeSync();
    this.instance.closeSync();
  }
}
