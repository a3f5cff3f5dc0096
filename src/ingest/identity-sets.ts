import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import type { FirstSeen } from './first-seen.js';
import type { IdentifierIndex } from './identifier-index.js';
import type { EventKeys, KeyMap } from './identifier-keys.js';
import type { Staged } from './line-source.js';

/** Lines with the same keys resolve alike: each accepted line's set, and each set once. */
export interface IdentitySets {
  /** Every first-seen line with keys, and its set (named by its first line's offset). */
  eventSets: TemporaryTable<'ingest_event_sets'>;
  /** Each set with its keys, their types and its first event. */
  sets: TemporaryTable<'ingest_sets'>;
}

/**
 * Groups the first-seen lines into identity sets. Runs once first seen is decided: a line that
 * lost its dedup key has no keys left and takes no part in resolution.
 */
export async function groupSets(
  staged: Staged,
  firstSeen: FirstSeen,
  keys: EventKeys,
): Promise<IdentitySets> {
  const session = sessionOf(staged, firstSeen.accepted, firstSeen.eventKeys, keys.keyLists);
  await session.run('ingest_group_sets');
  return {
    eventSets: temporaryTable(session, 'ingest_event_sets'),
    sets: temporaryTable(session, 'ingest_sets'),
  };
}

/** The stored identifiers the batch names, with their profiles. */
export type Known = TemporaryTable<'ingest_known'>;

/** Finds the stored profiles of the batch's keys in the store's identifier index. */
export async function findKnown(keyMap: KeyMap, index: IdentifierIndex): Promise<Known> {
  const session = sessionOf(keyMap);
  await index.findKnown(session);
  return temporaryTable(session, 'ingest_known');
}

/** The sets SQL resolved on its own, and what the rest need from the store. */
export interface SettledSets {
  /** Each set's keys, one row per key. */
  setKeys: TemporaryTable<'ingest_set_keys'>;
  /** Sets whose keys all belong to one stored profile: they go to it and change nothing. */
  settled: TemporaryTable<'ingest_settled'>;
  /** Sets of new keys no other set names: each starts its own profile. */
  fresh: TemporaryTable<'ingest_fresh'>;
  /** The stored profiles of the keys of the sets left to resolve in JS. */
  openKnown: TemporaryTable<'ingest_open_known'>;
}

/**
 * Resolves in SQL the sets whose outcome needs no order: returning customers and new ones whose
 * keys no other set shares. Needs the known profile of every key; runs before the JS resolution,
 * which takes only the sets left.
 */
export async function settleSets(
  identitySets: IdentitySets,
  keyMap: KeyMap,
  known: Known,
): Promise<SettledSets> {
  const session = sessionOf(identitySets.sets, keyMap, known);
  await session.run('ingest_settle_sets');
  return {
    setKeys: temporaryTable(session, 'ingest_set_keys'),
    settled: temporaryTable(session, 'ingest_settled'),
    fresh: temporaryTable(session, 'ingest_fresh'),
    openKnown: temporaryTable(session, 'ingest_open_known'),
  };
}
