import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import type { Candidates } from './duplicates.js';
import type { KeyMap } from './identifier-keys.js';

/** The lines in flight for an erased profile, and the key rows left without them. */
export interface ErasedDropped {
  erased: TemporaryTable<'ingest_erased'>;
  eventKeys: TemporaryTable<'ingest_event_keys', 'erased_dropped'>;
}

/**
 * Drops the lines received before an erasure that name one of its keys (design §15). Needs the
 * lines' keys, and runs before first seen is decided, so an erased line does not take a
 * contested dedup key from a line that can be stored.
 */
export async function dropErased(
  candidates: Candidates,
  eventKeys: TemporaryTable<'ingest_event_keys'>,
  keyMap: KeyMap,
): Promise<ErasedDropped> {
  const session = sessionOf(candidates.lines, eventKeys, keyMap);
  await session.run('ingest_drop_erased');
  return {
    erased: temporaryTable(session, 'ingest_erased'),
    eventKeys: temporaryTable(session, 'ingest_event_keys'),
  };
}

/** The lines the batch stores or rejects as first seen, and what later steps read of them. */
export interface FirstSeen {
  /** The first-seen lines (a view of `ingest_checked`), erased ones excepted. */
  accepted: TemporaryTable<'ingest_accepted'>;
  /** Key rows of first-seen lines and uncontested ones: a contested key's losers have none. */
  eventKeys: TemporaryTable<'ingest_event_keys', 'first_seen'>;
  /** Erased lines that were first seen, the only ones the batch counts as erased. */
  erased: TemporaryTable<'ingest_erased', 'first_seen'>;
}

/**
 * Decides which line a contested dedup key goes to: its first line that still has identifiers.
 * Needs the keys after placeholders and erased lines are dropped, so it runs after both.
 */
export async function decideFirstSeen(
  candidates: Candidates,
  unerased: ErasedDropped,
): Promise<FirstSeen> {
  const session = sessionOf(
    candidates.hashFirsts,
    candidates.contested,
    unerased.eventKeys,
    unerased.erased,
  );
  await session.run('ingest_first_seen');
  return {
    accepted: temporaryTable(session, 'ingest_accepted'),
    eventKeys: temporaryTable(session, 'ingest_event_keys'),
    erased: temporaryTable(session, 'ingest_erased'),
  };
}
