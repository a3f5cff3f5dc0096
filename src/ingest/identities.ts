import { encryptIdentifier } from '../identity/identifier-values.js';
import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import type { KeyRing } from '../tenant-keys.js';
import { traced } from '../trace.js';
import type { Candidates } from './duplicates.js';
import { decideFirstSeen, dropErased, type FirstSeen } from './first-seen.js';
import { collectGarbage } from './garbage.js';
import {
  type IdentifierIndex,
  type IdentityAdditions,
  identityAdditions,
} from './identifier-index.js';
import {
  distinctValues,
  type EventKeys,
  extractIdentifiers,
  groupEventKeys,
  type KeyMap,
  keyValues,
} from './identifier-keys.js';
import {
  findKnown,
  groupSets,
  type IdentitySets,
  type SettledSets,
  settleSets,
} from './identity-sets.js';
import type { Staged } from './line-source.js';
import { type ResolvedInJs, resolveInJs } from './resolve-in-js.js';

/**
 * Below this many sets resolved and identifiers encrypted in JS, a batch leaves too little garbage to
 * be worth a full collection (a few ms even on an empty heap).
 */
const COLLECT_GARBAGE_AFTER_ROWS = 1_000;

type NewProfiles = TemporaryTable<'ingest_new_profiles', 'complete'>;
type NewIdentifiers = TemporaryTable<'ingest_new_identifiers', 'complete'>;

interface WithFresh {
  resolution: TemporaryTable<'ingest_resolution', 'with_fresh'>;
  newProfiles: NewProfiles;
  newIdentifiers: NewIdentifiers;
}

/**
 * Adds the fresh sets' new profiles and identifiers to what JS resolved. Runs after the JS
 * resolution, which makes the outcome tables, and before encrypting, which encrypts every new identifier.
 */
async function resolveFresh(resolved: ResolvedInJs, settledSets: SettledSets): Promise<WithFresh> {
  const session = sessionOf(
    resolved.resolution,
    resolved.newProfiles,
    resolved.newIdentifiers,
    settledSets.fresh,
    settledSets.setKeys,
  );
  await session.run('ingest_resolve_fresh');
  return {
    resolution: temporaryTable(session, 'ingest_resolution'),
    newProfiles: temporaryTable(session, 'ingest_new_profiles'),
    newIdentifiers: temporaryTable(session, 'ingest_new_identifiers'),
  };
}

/**
 * New identifiers cross to JS in chunks of this many: a batch of new customers has 150k or more,
 * and their values, parsed and encrypted at once, were the peak of a 5M-event backlog's memory.
 */
const ENCRYPT_CHUNK = 20_000;

type Encrypted = TemporaryTable<'ingest_encrypted', 'filled'>;

/**
 * Encrypts and masks the batch's new identifiers (only their values come to JS). Needs every new
 * identifier, the fresh sets' among them; says how many it encrypted.
 */
async function encryptNewIdentifiers(
  newIdentifiers: NewIdentifiers,
  keyMap: KeyMap,
  empty: TemporaryTable<'ingest_encrypted', 'empty'>,
  keyRing: KeyRing,
): Promise<{ encrypted: Encrypted; count: number }> {
  const session = sessionOf(newIdentifiers, keyMap, empty);
  await session.run('ingest_number_values_to_encrypt');
  let count = 0;
  for (;;) {
    const values = await session.json<
      { tenant_id: string; identifier_key: string; identifier_type: string; normalized: string }[]
    >('ingest_values_to_encrypt', { after: count, chunk: ENCRYPT_CHUNK });
    if (values.length === 0) return { encrypted: temporaryTable(session, empty.name), count };
    const rows = await traced('encrypt new identifiers', async () =>
      values.map((row) => {
        const { ciphertext, masked } = encryptIdentifier(keyRing, {
          tenantId: row.tenant_id,
          type: row.identifier_type,
          normalized: row.normalized,
        });
        return [row.tenant_id, row.identifier_key, ciphertext, masked];
      }),
    );
    await session.appendTemporary(empty.name, rows);
    count += rows.length;
  }
}

type Resolution = TemporaryTable<'ingest_resolution', 'complete'>;

/**
 * Adds the settled sets to the resolution, each to its profile's survivor. Runs after every merge
 * is known (JS made them), since a settled set's profile may be merged by a set resolved after it.
 */
async function resolveSettled(
  withFresh: WithFresh,
  settledSets: SettledSets,
  merges: TemporaryTable<'ingest_merges'>,
): Promise<Resolution> {
  const session = sessionOf(withFresh.resolution, settledSets.settled, merges);
  await session.run('ingest_resolve_settled');
  return temporaryTable(session, 'ingest_resolution');
}

/**
 * Writes the new profiles and identifiers to the store, then the merges and conflicts: a merge
 * moves profiles and identifiers this batch may just have inserted. Stored events keep the profile
 * they were stored with; readers follow its `merged_into` (docs/decisions.md, "Merges"). Needs the encrypted values, which
 * the stored identifiers carry.
 */
async function storeIdentities(
  newProfiles: NewProfiles,
  newIdentifiers: NewIdentifiers,
  encrypted: Encrypted,
  resolved: ResolvedInJs,
  now: string,
): Promise<void> {
  const session = sessionOf(newProfiles, newIdentifiers, encrypted, resolved.merges);
  await session.run('ingest_insert_profiles');
  await session.run('ingest_insert_identifiers');
  if (resolved.counts.merges > 0) {
    await session.run('ingest_record_merges', { now });
    await session.run('ingest_apply_merges_to_profiles');
    await session.run('ingest_apply_merges_to_identifiers');
    await session.run('ingest_apply_merges_to_frozen_segments');
  }
  if (resolved.counts.conflicts > 0) await session.run('ingest_record_conflicts', { now });
}

/** What the identity step leaves for the steps that store the batch's events. */
export interface ResolvedBatch extends FirstSeen, IdentitySets {
  keyLists: EventKeys['keyLists'];
  resolution: Resolution;
  repeatResolution: ResolvedInJs['repeatResolution'];
  newProfiles: NewProfiles;
  merges: ResolvedInJs['merges'];
  /** Identifier values dropped (placeholders, unparsable) and profiles merged: counted. */
  dropped: number;
  mergeCount: number;
  /** What the identifier index gains once the batch commits. */
  additions: IdentityAdditions;
}

/**
 * The identity step of an ingest batch (design §10): keys the candidate lines' identifiers,
 * decides which lines are first seen, resolves every workspace's identity sets against what the
 * store knows and writes the outcome: new profiles and identifiers, merges, conflicts, and which
 * profile each set's events go to. Runs in the batch's transaction after its lines are staged and
 * their stored duplicates set aside, and before any event is stored.
 */
export async function resolveAndApply(
  staged: Staged,
  candidates: Candidates,
  keyRing: KeyRing,
  index: IdentifierIndex,
  now: string,
): Promise<ResolvedBatch> {
  const identifiers = await extractIdentifiers(candidates);
  const values = await distinctValues(identifiers);
  const { keyMap, rules, dropped } = await keyValues(values, keyRing);
  const keys = await groupEventKeys(candidates, identifiers, keyMap);
  const unerased = await dropErased(candidates, keys.eventKeys, keyMap);
  const firstSeen = await decideFirstSeen(candidates, unerased);
  const identitySets = await groupSets(staged, firstSeen, keys);

  const known = await findKnown(keyMap, index);
  const settledSets = await settleSets(identitySets, keyMap, known);
  const resolved = await resolveInJs(staged, firstSeen, identitySets, settledSets, rules, index);
  const withFresh = await resolveFresh(resolved, settledSets);
  const { encrypted, count } = await encryptNewIdentifiers(
    withFresh.newIdentifiers,
    keyMap,
    resolved.encrypted,
    keyRing,
  );
  // The parsed sets, outcome rows and encrypted values are garbage now, and V8 would keep them
  // through DuckDB's peak (storing the events) if not collected.
  if (resolved.counts.sets + count >= COLLECT_GARBAGE_AFTER_ROWS) {
    await traced('collect garbage', async () => collectGarbage());
  }
  const resolution = await resolveSettled(withFresh, settledSets, resolved.merges);
  await storeIdentities(withFresh.newProfiles, withFresh.newIdentifiers, encrypted, resolved, now);
  const additions = await identityAdditions(
    sessionOf(withFresh.newProfiles, withFresh.newIdentifiers, encrypted, resolved.merges),
  );
  return {
    ...firstSeen,
    ...identitySets,
    keyLists: keys.keyLists,
    resolution,
    repeatResolution: resolved.repeatResolution,
    newProfiles: withFresh.newProfiles,
    merges: resolved.merges,
    dropped,
    mergeCount: resolved.counts.merges,
    additions,
  };
}
