import type { Session } from '../store/session.js';
import { type TemporaryTable, temporaryTable } from '../store/temporary-table.js';

/** What a batch's lines are checked against: its workspaces and event types, as bound constants. */
export interface Catalog {
  workspaces: string;
  event_types: string;
}

/**
 * A batch's lines, as the pipeline's first step takes them (an ingest source hands one over per
 * batch, source.ts). They are staged into the one table all later steps read (`ingest_checked`:
 * each line parsed, checked against the catalog and given its dedup key, in the order given), so
 * the steps after staging do not know the source.
 */
export interface LineSource {
  /**
   * Where the lines came from, by position: a staged line's `file_index` (from 1) names its
   * origin here, which its rejection records.
   */
  readonly origins: readonly string[];
  /**
   * Makes `ingest_checked` with every line, with the columns and checks `ingest_stage` gives them,
   * its rowid following the lines' order: first seen goes by it.
   */
  stage(session: Session, catalog: Catalog): Promise<void>;
}

/**
 * NDJSON files of landing lines, read in the order given: sealed landing files (design §2), or
 * the files a batch of the events stream is written to. `origins` name them by position (the
 * files' own paths unless said otherwise).
 */
export function ndjsonFiles(
  paths: readonly string[],
  origins: readonly string[] = paths,
): LineSource {
  return {
    origins,
    async stage(session, catalog) {
      await session.run('ingest_stage', { paths: JSON.stringify(paths), ...catalog });
    },
  };
}

/** Every line of the batch, in source order (its rowid), with where it came from. */
export interface Staged extends TemporaryTable<'ingest_checked'> {
  readonly origins: readonly string[];
}

/**
 * The first step of a batch: it runs in the batch's transaction, so the lines are checked against
 * the catalog as the transaction sees it, and every later step reads what it staged.
 */
export async function stageLines(session: Session, source: LineSource): Promise<Staged> {
  const catalog = (await session.one<Catalog>('ingest_catalog')) as Catalog;
  await source.stage(session, catalog);
  return { ...temporaryTable(session, 'ingest_checked'), origins: source.origins };
}

/** The origins as the SQL binds them (`$paths`). */
export function originsParam(staged: Staged): string {
  return JSON.stringify(staged.origins);
}
