import { chmod, rename, rm } from 'node:fs/promises';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Connections } from './connections.js';
import { PRIVATE_FILE_MODE } from './file-modes.js';
import type { Recovery } from './recovery.js';
import { Session } from './session.js';
import { sqlStringLiteral } from './sql-files.js';
import { storageFaultOf, unknownFault } from './storage-fault.js';
import { transaction, type Work } from './transaction.js';
import type { WriteQueue } from './write-queue.js';

/** What a caller of `Store.replaceWithCopy` adds to the rewrite. */
export interface RewriteSteps {
  /** In the copy's transaction, right after the copy: `cds_rewrite` holds its snapshot. */
  inCopy?: (session: Session) => Promise<void>;
  /** After the copy is committed, while writes go on; for what the swap must not come before. */
  beforeSwap?: (session: Session) => Promise<void>;
}

const rewriteCopyPath = (path: string) => `${path}.rewrite`;

async function removeDatabaseFile(path: string): Promise<void> {
  await Promise.all([rm(path, { force: true }), rm(`${path}.wal`, { force: true })]);
}

/** Removes a copy left beside the database at `path` by a rewrite cut off before its swap. */
export async function removeUnfinishedRewrite(path: string): Promise<void> {
  await removeDatabaseFile(rewriteCopyPath(path));
}

/**
 * Replacing the database file with a fresh copy of its live data while the store goes on
 * (`replaceWithCopy`), and running the replayable writes committed meanwhile again on the copy.
 */
export class LiveRewrite {
  /**
   * While a rewrite copies the file: the replayable writes committed since the copy's snapshot,
   * to run again on the copy before the swap (`keepForReplay`).
   */
  private replaysForCopy: Work<unknown>[] | null = null;
  /** File rewrites completed since the store opened. */
  private completed = 0;

  constructor(
    private readonly path: string,
    private readonly queue: WriteQueue,
    private readonly connections: Connections,
    private readonly recovery: Recovery,
  ) {}

  /** How many times the file was replaced by a copy since the store opened. */
  get rewrites(): number {
    return this.completed;
  }

  /**
   * Keeps a replayable write that has just committed, to run it again on the copy, while a rewrite
   * is copying the file; answers whether it did.
   */
  keepForReplay(work: Work<unknown>): boolean {
    if (!this.replaysForCopy) return false;
    this.replaysForCopy.push(work);
    return true;
  }

  /**
   * Replaces the database file with a fresh copy of its live data, so that no block of the file
   * keeps what was deleted (design §15): DuckDB leaves deleted rows in their blocks and packs small
   * segments of many tables into shared blocks, so no checkpoint clears them. The copy is made on
   * a connection of its own from one snapshot of the file, taken between two writes; writes
   * queued after the rewrite wait for it, while replayable writes (`Store.writeReplayable`) go on
   * and run again on the copy before the swap. Reads go on until the swap itself, which waits for
   * them. The copy is renamed over the file once complete, so a crash leaves either the old file
   * or the new one, never half of one.
   */
  replaceWithCopy(steps: RewriteSteps): Promise<void> {
    const run = async (): Promise<void> => {
      this.recovery.throwIfUnavailable();
      const copy = rewriteCopyPath(this.path);
      await removeDatabaseFile(copy);
      const connection = await this.connections.connect();
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
        throw this.recovery.failedWith(error);
      }
    };
    return this.queue.enqueue(run);
  }

  /** The copy, from a snapshot taken while no write runs, in one transaction. */
  private async copyInto(session: Session, steps: RewriteSteps): Promise<void> {
    await this.queue.onWriter(async () => {
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
    await this.queue.onWriter(async () => {
      const session = new Session(connection);
      const replayed = await this.replayOnCopy(connection);
      this.replaysForCopy = null;
      if (replayed) await session.run('store_checkpoint_rewrite');
      await session.run('store_detach_rewrite');
      connection.closeSync();
      await rm(`${copy}.wal`, { force: true });
      // DuckDB creates the copy with the process's umask, which only the CLI sets.
      await chmod(copy, PRIVATE_FILE_MODE);
      await this.connections
        .reconnect(async () => {
          await rm(`${this.path}.wal`, { force: true });
          await rename(copy, this.path);
        })
        .catch((error: unknown) => {
          // Without connections nothing works until the file opens again: reopening starts.
          this.recovery.invalidated(storageFaultOf(error) ?? unknownFault(error));
          throw this.recovery.unavailable();
        });
      this.completed++;
    });
  }
}
