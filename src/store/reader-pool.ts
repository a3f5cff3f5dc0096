import type { DuckDBConnection } from '@duckdb/node-api';

/** The reader connections, each running one read at a time; a read waits for a free one. */
export class ReaderPool {
  private readonly idle: DuckDBConnection[] = [];
  private readonly waiting: ((connection: DuckDBConnection) => void)[] = [];

  /** `size`: how many connections the pool holds when none is taken out. */
  constructor(private readonly size: number) {}

  /** `use` on a reader connection of its own, once one is free. */
  async withOne<T>(use: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    const connection = await this.acquire();
    try {
      return await use(connection);
    } finally {
      this.release(connection);
    }
  }

  /**
   * `use` once no read runs, and with none starting until it is done; it is given one of the idle
   * connections, for a statement that must not run on the writer.
   */
  async withAll<T>(use: (idle: DuckDBConnection) => Promise<T>): Promise<T> {
    // Every connection asked for at once, so no read that starts later gets one in between.
    const [first, rest] = await Promise.all([this.acquire(), this.acquireAll(this.size - 1)]);
    const connections = [first, ...rest];
    try {
      return await use(first);
    } finally {
      for (const connection of connections) this.release(connection);
    }
  }

  /**
   * `count` reader connections (every one by default), once the reads running on them are done,
   * taken out of the pool: reads wait until `release` puts connections back.
   */
  acquireAll(count = this.size): Promise<DuckDBConnection[]> {
    return Promise.all(Array.from({ length: count }, () => this.acquire()));
  }

  /** Hands `connection` to the read waiting longest, or keeps it for the next one. */
  release(connection: DuckDBConnection): void {
    const waiting = this.waiting.shift();
    if (waiting) waiting(connection);
    else this.idle.push(connection);
  }

  /** The connections no read holds, taken out of the pool for good. */
  takeIdle(): DuckDBConnection[] {
    return this.idle.splice(0);
  }

  private acquire(): Promise<DuckDBConnection> {
    const connection = this.idle.pop();
    if (connection) return Promise.resolve(connection);
    return new Promise((resolve) => this.waiting.push(resolve));
  }
}
