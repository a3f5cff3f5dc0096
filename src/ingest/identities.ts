import {
  normalizeInJs,
  PlaceholderRules,
  type RawIdentifier,
  sealIdentifier,
} from '../identity/identifier-values.js';
import {
  type IdentitySet,
  type KnownProfile,
  type Repeat,
  type Resolution,
  type ResolutionInput,
  resolveIdentities,
} from '../identity/resolve.js';
import type { EventSource } from '../landing-format.js';
import type { AppendValue, Session } from '../store/session.js';
import type { KeyRing } from '../tenant-keys.js';
import { traced } from '../trace.js';
import { collectGarbage } from './garbage.js';

/**
 * Below this many sets resolved and identifiers sealed in JS, a batch leaves too little garbage to
 * be worth a full collection (a few ms even on an empty heap).
 */
const COLLECT_GARBAGE_AFTER_ROWS = 1_000;

interface SetRow {
  set_id: number;
  tenant_id: string;
  workspace_id: string;
  source: EventSource;
  /** Identifier keys, and their types in the same order. */
  keys: string[];
  types: string[];
  first_event_id: string;
  first_at: string;
}

interface KnownRow {
  tenant_id: string;
  workspace_id: string;
  identifier_key: string;
  profile_id: string;
  created_at: string;
}

interface CountRow {
  tenant_id: string;
  workspace_id: string;
  profile_id: string;
  identifier_type: string;
  n: number;
}

const scopeOf = (tenantId: string, workspaceId: string) => `${tenantId}\0${workspaceId}`;

interface TenantRules {
  placeholders: PlaceholderRules;
  maxPerProfile: Map<string, Map<string, number>>;
}

async function loadRules(session: Session, tenants: string[]): Promise<TenantRules> {
  const rows = await session.all<{
    tenant_id: string;
    identifier_type: string;
    max_per_profile: number | null;
    placeholders: string[];
  }>('ingest_tenant_rules', { tenants: JSON.stringify(tenants) });
  const placeholders = new PlaceholderRules();
  const maxPerProfile = new Map<string, Map<string, number>>();
  for (const row of rows) {
    placeholders.add(row.tenant_id, row.identifier_type, row.placeholders);
    const limits = maxPerProfile.get(row.tenant_id) ?? new Map<string, number>();
    if (row.max_per_profile !== null) limits.set(row.identifier_type, row.max_per_profile);
    maxPerProfile.set(row.tenant_id, limits);
  }
  return { placeholders, maxPerProfile };
}

/** Rows of one scope (tenant and workspace), grouped once instead of filtered per scope. */
function groupByScope<T extends { tenant_id: string; workspace_id: string }>(
  rows: T[],
): Map<string, T[]> {
  const grouped = new Map<string, T[]>();
  for (const row of rows) {
    const scope = scopeOf(row.tenant_id, row.workspace_id);
    const list = grouped.get(scope);
    if (list) list.push(row);
    else grouped.set(scope, [row]);
  }
  return grouped;
}

/**
 * Keys each distinct identifier value of the batch (design §10): SQL normalises what it can, JS
 * the rest, placeholders are dropped, and SQL computes the HMAC keys (`ingest_id_map`).
 */
async function keyValues(
  session: Session,
  keyRing: KeyRing,
): Promise<{ rules: TenantRules; dropped: number }> {
  await session.run('ingest_extract_identifiers');
  await session.run('ingest_distinct_values');
  const tenants = (await session.all<{ tenant_id: string }>('ingest_batch_tenants')).map(
    (row) => row.tenant_id,
  );
  const rules = await loadRules(session, tenants);
  await session.run('ingest_create_keying_tables');
  await session.appendTemporary(
    'ingest_lookup_pads',
    tenants.map((tenantId) => {
      const pads = keyRing.forTenant(tenantId).lookupPads();
      return [tenantId, pads.inner, pads.outer];
    }),
  );
  const inJs = await session.all<RawIdentifier>('ingest_values_for_js');
  await session.appendTemporary('ingest_js_normalized', normalizeInJs(inJs, rules.placeholders));
  await session.run('ingest_key_values', { placeholders: rules.placeholders.toJson() });
  const dropped = (await session.one<{ dropped: number }>('ingest_dropped_values'))?.dropped ?? 0;
  return { rules, dropped };
}

/**
 * New identifiers cross to JS in chunks of this many: a batch of new customers has 150k or more,
 * and their values, parsed and sealed at once, were the peak of a 5M-event backlog's memory.
 */
const SEAL_CHUNK = 20_000;

/** Encrypts and masks the batch's new identifiers (only their values come to JS); says how many. */
async function sealNewIdentifiers(session: Session, keyRing: KeyRing): Promise<number> {
  await session.run('ingest_number_values_to_seal');
  let sealed = 0;
  for (;;) {
    const values = await session.json<
      { tenant_id: string; identifier_key: string; identifier_type: string; normalized: string }[]
    >('ingest_values_to_seal', { after: sealed, chunk: SEAL_CHUNK });
    if (values.length === 0) return sealed;
    const rows = await traced('seal new identifiers', async () =>
      values.map((row) => {
        const { ciphertext, masked } = sealIdentifier(keyRing, {
          tenantId: row.tenant_id,
          type: row.identifier_type,
          normalized: row.normalized,
        });
        return [row.tenant_id, row.identifier_key, ciphertext, masked];
      }),
    );
    await session.appendTemporary('ingest_sealed', rows);
    sealed += rows.length;
  }
}

/** The outcome of resolving every workspace's sets, as rows for the outcome tables. */
interface Outcome {
  resolutionRows: AppendValue[][];
  repeatRows: AppendValue[][];
  profileRows: AppendValue[][];
  identifierRows: AppendValue[][];
  mergeRows: AppendValue[][];
  conflictRows: AppendValue[][];
}

interface RepeatRow {
  set_id: number;
  event_offset: number;
  event_id: string;
  at: string;
}

/** What one workspace's resolution starts from, with the resolution once made. */
interface Scope {
  input: ResolutionInput;
  typeOfKey: Map<string, string>;
  resolution: Resolution;
}

function scopeInput(
  scopeSets: SetRow[],
  inScope: KnownRow[],
  counts: CountRow[],
  rules: TenantRules,
): { input: ResolutionInput; typeOfKey: Map<string, string> } {
  const { tenant_id: tenantId, workspace_id: workspaceId } = scopeSets[0] as SetRow;
  const profiles = new Map<string, KnownProfile>();
  for (const row of inScope) {
    profiles.set(row.profile_id, {
      profileId: row.profile_id,
      createdAt: row.created_at,
      typeCounts: new Map(),
    });
  }
  for (const row of counts)
    profiles.get(row.profile_id)?.typeCounts.set(row.identifier_type, row.n);
  const typeOfKey = new Map<string, string>();
  const sets: IdentitySet[] = scopeSets.map((row) => {
    for (const [index, key] of row.keys.entries()) typeOfKey.set(key, row.types[index] as string);
    return {
      setId: row.set_id,
      source: row.source,
      keys: row.keys,
      firstEventId: row.first_event_id,
      firstAt: row.first_at,
    };
  });
  return {
    input: {
      tenantId,
      workspaceId,
      sets,
      typeOfKey,
      maxPerProfile: rules.maxPerProfile.get(tenantId) ?? new Map(),
      profileOfKey: new Map(inScope.map((row) => [row.identifier_key, row.profile_id])),
      profiles,
    },
    typeOfKey,
  };
}

/**
 * Resolves every workspace's sets exactly as one event at a time would: sets first, then again
 * with the later events of each set whose first event did not settle its keys, fetched from the
 * batch, until every unsettled set's later events were given. Most batches need one pass: a set
 * is unsettled only where `max_per_profile` refused a key or a merge, or a browser event named
 * keys of two profiles.
 */
async function resolveExactly(
  session: Session,
  sets: SetRow[],
  known: Map<string, KnownRow[]>,
  counts: Map<string, CountRow[]>,
  rules: TenantRules,
): Promise<Scope[]> {
  const scopes = new Map<string, Scope>();
  const scopeOfSet = new Map<number, string>();
  for (const [scope, scopeSets] of groupByScope(sets)) {
    const prepared = scopeInput(scopeSets, known.get(scope) ?? [], counts.get(scope) ?? [], rules);
    for (const set of scopeSets) scopeOfSet.set(set.set_id, scope);
    scopes.set(scope, { ...prepared, resolution: resolveIdentities(prepared.input) });
  }
  const repeated = new Set<number>();
  for (;;) {
    const unsettled = [...scopes.values()].flatMap((scope) =>
      [...scope.resolution.unsettledSets].filter((setId) => !repeated.has(setId)),
    );
    if (unsettled.length === 0) return [...scopes.values()];
    for (const setId of unsettled) repeated.add(setId);
    const repeats = await session.all<RepeatRow>('ingest_set_repeats', {
      set_ids: JSON.stringify([...repeated]),
    });
    const byScope = new Map<string, Repeat[]>();
    for (const row of repeats) {
      const scope = scopeOfSet.get(row.set_id) as string;
      const list = byScope.get(scope) ?? [];
      list.push({ setId: row.set_id, offset: row.event_offset, eventId: row.event_id, at: row.at });
      byScope.set(scope, list);
    }
    for (const [key, scope] of scopes) {
      if (![...scope.resolution.unsettledSets].some((setId) => unsettled.includes(setId))) continue;
      scope.input = { ...scope.input, repeats: byScope.get(key) ?? [] };
      scope.resolution = resolveIdentities(scope.input);
    }
  }
}

function outcomeRows(scopes: Scope[]): Outcome {
  const outcome: Outcome = {
    resolutionRows: [],
    repeatRows: [],
    profileRows: [],
    identifierRows: [],
    mergeRows: [],
    conflictRows: [],
  };
  for (const { input, typeOfKey, resolution } of scopes) {
    const { tenantId, workspaceId } = input;
    for (const set of input.sets) {
      outcome.resolutionRows.push([set.setId, resolution.profileOfSet.get(set.setId) ?? null]);
    }
    for (const [offset, profileId] of resolution.profileOfRepeat) {
      outcome.repeatRows.push([offset, profileId]);
    }
    for (const profile of resolution.newProfiles) {
      outcome.profileRows.push([tenantId, workspaceId, profile.profileId, profile.createdAt]);
    }
    for (const identifier of resolution.newIdentifiers) {
      outcome.identifierRows.push([
        tenantId,
        workspaceId,
        identifier.key,
        typeOfKey.get(identifier.key) as string,
        identifier.profileId,
        identifier.firstSeenAt,
      ]);
    }
    for (const merge of resolution.merges) {
      outcome.mergeRows.push([
        tenantId,
        workspaceId,
        merge.mergedProfileId,
        merge.survivorProfileId,
        merge.eventId,
      ]);
    }
    for (const conflict of resolution.conflicts) {
      outcome.conflictRows.push([
        tenantId,
        workspaceId,
        conflict.profileId,
        conflict.otherProfileId,
        conflict.identifierType,
        conflict.reason,
        conflict.eventId,
      ]);
    }
  }
  return outcome;
}

/**
 * Resolves in JS the sets SQL left (ingest_settle_sets) and appends the outcome to the outcome
 * tables; says how many sets, merges and conflicts. What it parsed is garbage once it returns.
 */
async function resolveInJs(
  session: Session,
  rules: TenantRules,
): Promise<{ sets: number; merges: number; conflicts: number }> {
  const sets = await session.json<SetRow[]>('ingest_identity_sets');
  const known = groupByScope(await session.json<KnownRow[]>('ingest_known_identifiers'));
  const counts = groupByScope(await session.all<CountRow>('ingest_profile_type_counts'));

  const outcome = await traced('resolve identities', async () =>
    outcomeRows(await resolveExactly(session, sets, known, counts, rules)),
  );

  await session.run('ingest_create_outcome_tables');
  await session.appendTemporary('ingest_resolution', outcome.resolutionRows);
  await session.appendTemporary('ingest_repeat_resolution', outcome.repeatRows);
  await session.appendTemporary('ingest_new_profiles', outcome.profileRows);
  await session.appendTemporary('ingest_new_identifiers', outcome.identifierRows);
  await session.appendTemporary('ingest_merges', outcome.mergeRows);
  await session.appendTemporary('ingest_conflicts', outcome.conflictRows);
  return {
    sets: sets.length,
    merges: outcome.mergeRows.length,
    conflicts: outcome.conflictRows.length,
  };
}

/**
 * The identity step of an ingest batch (design §10): resolves every workspace's identity sets
 * against what the store knows and writes the outcome: new profiles and identifiers, merges,
 * conflicts, and which profile each set's events go to (`ingest_resolution`). Runs in the batch's
 * transaction after its lines are staged and their stored duplicates marked (it reads
 * `ingest_candidates`), decides which lines are first seen (`ingest_accepted`), and runs before
 * `ingest_assign_profiles`, which gives each event its set's profile.
 */
export async function resolveAndApply(session: Session, keyRing: KeyRing, now: string) {
  const { rules, dropped } = await keyValues(session, keyRing);
  await session.run('ingest_group_event_keys');
  await session.run('ingest_drop_erased');
  // Dedup needs the keys: a line left without identifiers does not take its dedup key.
  await session.run('ingest_first_seen');
  await session.run('ingest_group_sets');

  await session.run('ingest_find_known');
  await session.run('ingest_settle_sets');
  const resolved = await resolveInJs(session, rules);
  await session.run('ingest_resolve_fresh');
  const sealed = await sealNewIdentifiers(session, keyRing);
  // The parsed sets, outcome rows and sealed values are garbage now, and V8 would keep them
  // through DuckDB's peak (storing the events) if not collected.
  if (resolved.sets + sealed >= COLLECT_GARBAGE_AFTER_ROWS) {
    await traced('collect garbage', async () => collectGarbage());
  }
  await session.run('ingest_resolve_settled');
  await session.run('ingest_insert_profiles');
  await session.run('ingest_insert_identifiers');
  if (resolved.merges > 0) {
    await session.run('ingest_record_merges', { now });
    await session.run('ingest_apply_merges_to_created_at');
    await session.run('ingest_apply_merges_to_profiles');
    await session.run('ingest_apply_merges_to_earlier_merges');
    await session.run('ingest_apply_merges_to_identifiers');
    await session.run('ingest_apply_merges_to_events');
    await session.run('ingest_apply_merges_to_frozen_segments');
  }
  if (resolved.conflicts > 0) await session.run('ingest_record_conflicts', { now });
  return { dropped, merges: resolved.merges };
}
