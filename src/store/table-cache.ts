import type { Connections } from './connections.js';
import { Session } from './session.js';
import { sqlStringLiteral } from './sql-files.js';

/** The table blocks DuckDB may keep cached when its table cache is released. */
const TABLE_CACHE_FLOOR_BYTES = 32 * 1024 * 1024;

/** DuckDB's cache of the file's table blocks, which the store empties after large writes. */
export class TableCache {
  /** The limit `release` puts back. */
  private fullMemoryLimit: string | undefined;

  constructor(
    private readonly connections: Connections,
    private readonly memoryLimit: string | undefined,
  ) {}

  /**
   * Evicts the blocks of the file DuckDB holds cached. DuckDB keeps each block it wrote or read
   * until its `memory_limit` (80% of RAM when unset) runs out, so across ingest batches the cache
   * grew with the database: 640 MiB of table blocks after 5M events, most never read again, and
   * within a batch the stored tables it scanned sat beside its own temporary tables. Lowering the
   * limit to what DuckDB holds besides them is DuckDB's way to evict them; what is read again
   * comes back from the operating system's page cache (what it costs: docs/decisions.md, Memory
   * and spilling). It may run inside a write, between two of its statements. Readers wait
   * meanwhile: under the low limit a query of theirs could fail for want of memory.
   *
   * The limit is a setting of the whole database, changed here on an idle reader connection,
   * never the writer's: DuckDB refuses a limit it cannot evict down to (blocks the write holds
   * count as cached but cannot go), and a refused statement aborts the transaction it ran in. On
   * the writer, that aborted the ingest batch under way, then every part its isolation retried,
   * down to single lines, each quarantined (found at 4M events with metrics defined).
   */
  async release(): Promise<void> {
    const session = new Session(this.connections.writer);
    // One row always: sums over duckdb_memory().
    const memoryHeld = async () =>
      (await session.one('store_memory_held')) as { cached: number; held: number };
    // Little cached, nothing to do: readers are not stopped after every small batch of `serve`.
    if ((await memoryHeld()).cached <= TABLE_CACHE_FLOOR_BYTES) return;
    await this.connections.readers.withAll(async (reader) => {
      // Set back explicitly: RESET shows DuckDB's default again but leaves the buffer pool at the
      // low limit (DuckDB 1.5.5). The default is read once, as DuckDB prints it rounded down: read
      // again each time, it would shrink by a rounding step each batch.
      this.fullMemoryLimit ??=
        this.memoryLimit ??
        ((await session.one<{ memory_limit: string }>('store_memory_limit'))
          ?.memory_limit as string);
      const floor = (await memoryHeld()).held + TABLE_CACHE_FLOOR_BYTES;
      await reader.run(`SET memory_limit = '${floor}B'`).catch(() => {
        // Whatever could not be evicted stays; the limit is put back all the same.
      });
      await reader.run(`SET memory_limit = ${sqlStringLiteral(this.fullMemoryLimit)}`);
    });
  }
}
