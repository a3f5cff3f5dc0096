/**
 * The loading of an in-memory index started before any batch needs it (`prepareIndexes`): the
 * batch that needs it, and saving it as the process stops, wait for it. Failed, it is logged by
 * whoever started it, and the batch loads the index again from its own session.
 */
export class LoadAhead {
  private loading: Promise<unknown> | null = null;

  start(loading: Promise<unknown>): Promise<unknown> {
    this.loading = loading;
    return loading;
  }

  /** Once the loading started ahead, if any, has ended either way. */
  async settled(): Promise<void> {
    await this.loading?.catch(() => undefined);
  }
}
