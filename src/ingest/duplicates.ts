import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import type { DedupIndex, KeyHalves, StoredKeys } from './dedup-index.js';
import type { Staged } from './line-source.js';

/** The valid lines that stored events do not already hold, and how their dedup keys stand. */
export interface Candidates {
  /** The lines still to key (a view of `ingest_checked`): each key's only or contested lines. */
  lines: TemporaryTable<'ingest_candidates'>;
  /** Each new dedup key's first line and how many lines hold it. */
  hashFirsts: TemporaryTable<'ingest_hash_firsts'>;
  /** The lines of keys several lines hold: which of them wins needs their identifiers. */
  contested: TemporaryTable<'ingest_contested'>;
  /** The stored events whose keys lines of the batch hold, with their profiles. */
  storedKeys: StoredKeys;
  /** The valid lines' dedup keys, for the dedup index once committed. */
  dedupKeys: KeyHalves;
}

/**
 * Sets aside the lines whose dedup key a stored event holds (first seen wins, design §9), as the
 * store's dedup index finds them. Runs
 * right after staging: every identity step after it keys only the candidates, not the duplicates
 * of a replayed file.
 */
export async function markDuplicates(staged: Staged, index: DedupIndex): Promise<Candidates> {
  const { storedKeys, keys } = await index.findStored(staged);
  const session = sessionOf(staged, storedKeys);
  await session.run('ingest_mark_duplicates');
  return {
    storedKeys,
    dedupKeys: keys,
    lines: temporaryTable(session, 'ingest_candidates'),
    hashFirsts: temporaryTable(session, 'ingest_hash_firsts'),
    contested: temporaryTable(session, 'ingest_contested'),
  };
}
