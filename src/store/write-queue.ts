/**
 * The order of the store's work. Writes run one after another in the order they were asked for,
 * file rewrites among them (`enqueue`). DuckDB runs one statement at a time on a connection, so
 * whatever uses the writer connection also waits until it is free (`onWriter`): replayable writes
 * take only that turn, and so pass the writes queued before them.
 */
export class WriteQueue {
  /** Writes in the order they were asked for, and file rewrites among them. */
  private writeTail: Promise<unknown> = Promise.resolve();
  /** The writer connection, one transaction at a time (`onWriter`). */
  private writerTail: Promise<unknown> = Promise.resolve();

  /** Runs after everything queued before it, whether that succeeded or not. */
  enqueue<T>(run: () => Promise<T>): Promise<T> {
    const result = this.writeTail.then(run, run);
    this.writeTail = result.catch(() => undefined);
    return result;
  }

  /** Runs when the writer connection is free: DuckDB runs one statement at a time on it. */
  onWriter<T>(run: () => Promise<T>): Promise<T> {
    const result = this.writerTail.then(run, run);
    this.writerTail = result.catch(() => undefined);
    return result;
  }

  /** Runs in its turn among the writes, with the writer connection to itself. */
  inTurn<T>(run: () => Promise<T>): Promise<T> {
    return this.enqueue(() => this.onWriter(run));
  }

  /** Settles once everything queued so far has run. */
  async drained(): Promise<void> {
    await this.writeTail;
    await this.writerTail;
  }
}
