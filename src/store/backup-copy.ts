import type { DuckDBConnection } from '@duckdb/node-api';
import type { Connections } from './connections.js';
import type { Recovery } from './recovery.js';
import { Session } from './session.js';
import { sqlStringLiteral } from './sql-files.js';
import type { Work } from './transaction.js';
import type { WriteQueue } from './write-queue.js';

/** Copies of the whole database into files of their own (backups), one at a time. */
export class BackupCopies {
  /** One copy at a time: each attaches its file under the same name. */
  private copyTail: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly queue: WriteQueue,
    private readonly connections: Connections,
    private readonly recovery: Recovery,
  ) {}

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
    const started = this.queue.enqueue(async () => {
      // One copy at a time, as each attaches its file under the same name: a second asked for
      // while one runs holds the writes queued after it until the first is done.
      await previous;
      return this.queue.onWriter(async () => {
        this.recovery.throwIfUnavailable();
        const connection = await this.connections.connect();
        const session = new Session(connection);
        try {
          await session.runText(`ATTACH ${sqlStringLiteral(path)} AS cds_backup`);
          await session.runText('BEGIN TRANSACTION');
          const read = await firstRead(session);
          const copied = this.finishCopy(connection, read);
          this.connections.holdOpenFor(copied);
          // Wrapped, so the queue goes on without waiting for the copy.
          return { copied };
        } catch (error) {
          await session.run('store_detach_backup').catch(() => undefined);
          connection.closeSync();
          throw this.recovery.failedWith(error);
        }
      });
    });
    const result = started.then(({ copied }) => copied);
    this.copyTail = result.catch(() => undefined);
    return result;
  }

  /** Settles once every copy asked for so far is done. */
  async drained(): Promise<void> {
    await this.copyTail;
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
      throw this.recovery.failedWith(error);
    } finally {
      connection.closeSync();
    }
  }
}
