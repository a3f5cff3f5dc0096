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
import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import { traced } from '../trace.js';
import type { FirstSeen } from './first-seen.js';
import type { IdentifierIndex } from './identifier-index.js';
import type { TenantRules } from './identifier-keys.js';
import type { IdentitySets, SettledSets } from './identity-sets.js';
import type { Staged } from './line-source.js';

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

const scopeOf = (tenantId: string, workspaceId: string) => `${tenantId}\0${workspaceId}`;

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

/** The outcome of resolving every workspace's sets, as rows for the outcome tables. */
interface OutcomeRows {
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
  index: IdentifierIndex,
  rules: TenantRules,
): { input: ResolutionInput; typeOfKey: Map<string, string> } {
  const { tenant_id: tenantId, workspace_id: workspaceId } = scopeSets[0] as SetRow;
  const profiles = new Map<string, KnownProfile>();
  for (const row of inScope) {
    if (profiles.has(row.profile_id)) continue;
    profiles.set(row.profile_id, {
      profileId: row.profile_id,
      createdAt: row.created_at,
      typeCounts: index.typeCounts(tenantId, workspaceId, row.profile_id),
    });
  }
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
  index: IdentifierIndex,
  rules: TenantRules,
): Promise<Scope[]> {
  const scopes = new Map<string, Scope>();
  const scopeOfSet = new Map<number, string>();
  for (const [scope, scopeSets] of groupByScope(sets)) {
    const prepared = scopeInput(scopeSets, known.get(scope) ?? [], index, rules);
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

function outcomeRows(scopes: Scope[]): OutcomeRows {
  const outcome: OutcomeRows = {
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
 * The outcome tables of resolution, as JS left them: the SQL steps after it add the fresh and
 * settled sets, and the encrypted values of the new identifiers.
 */
export interface ResolvedInJs {
  /** Which profile each set's events go to. */
  resolution: TemporaryTable<'ingest_resolution', 'resolved_in_js'>;
  /** Where a set's later event resolved on its own went, by its offset in the batch. */
  repeatResolution: TemporaryTable<'ingest_repeat_resolution'>;
  newProfiles: TemporaryTable<'ingest_new_profiles', 'resolved_in_js'>;
  newIdentifiers: TemporaryTable<'ingest_new_identifiers', 'resolved_in_js'>;
  /** Made empty here, for the encrypting step to fill. */
  encrypted: TemporaryTable<'ingest_encrypted', 'empty'>;
  merges: TemporaryTable<'ingest_merges'>;
  conflicts: TemporaryTable<'ingest_conflicts'>;
  /** How many sets JS resolved, and the merges and conflicts they made: expected outcomes. */
  counts: { sets: number; merges: number; conflicts: number };
}

/**
 * Resolves in JS the sets SQL left (`settleSets`), exactly as one event at a time would, and
 * appends the outcome to the outcome tables. Runs after SQL settled what it could, so only the
 * sets whose outcome depends on order cross into JS. What it parsed is garbage once it returns.
 */
export async function resolveInJs(
  staged: Staged,
  firstSeen: FirstSeen,
  identitySets: IdentitySets,
  settledSets: SettledSets,
  rules: TenantRules,
  index: IdentifierIndex,
): Promise<ResolvedInJs> {
  const session = sessionOf(
    staged,
    firstSeen.accepted,
    identitySets.eventSets,
    identitySets.sets,
    settledSets.settled,
    settledSets.fresh,
    settledSets.openKnown,
  );
  const sets = await session.json<SetRow[]>('ingest_identity_sets');
  const known = groupByScope(await session.json<KnownRow[]>('ingest_known_identifiers'));

  const outcome = await traced('resolve identities', async () =>
    outcomeRows(await resolveExactly(session, sets, known, index, rules)),
  );

  await session.run('ingest_create_outcome_tables');
  const tables = {
    resolution: temporaryTable<'ingest_resolution', 'resolved_in_js'>(session, 'ingest_resolution'),
    repeatResolution: temporaryTable(session, 'ingest_repeat_resolution'),
    newProfiles: temporaryTable<'ingest_new_profiles', 'resolved_in_js'>(
      session,
      'ingest_new_profiles',
    ),
    newIdentifiers: temporaryTable<'ingest_new_identifiers', 'resolved_in_js'>(
      session,
      'ingest_new_identifiers',
    ),
    encrypted: temporaryTable<'ingest_encrypted', 'empty'>(session, 'ingest_encrypted'),
    merges: temporaryTable(session, 'ingest_merges'),
    conflicts: temporaryTable(session, 'ingest_conflicts'),
  };
  await session.appendTemporary(tables.resolution.name, outcome.resolutionRows);
  await session.appendTemporary(tables.repeatResolution.name, outcome.repeatRows);
  await session.appendTemporary(tables.newProfiles.name, outcome.profileRows);
  await session.appendTemporary(tables.newIdentifiers.name, outcome.identifierRows);
  await session.appendTemporary(tables.merges.name, outcome.mergeRows);
  await session.appendTemporary(tables.conflicts.name, outcome.conflictRows);
  return {
    ...tables,
    counts: {
      sets: sets.length,
      merges: outcome.mergeRows.length,
      conflicts: outcome.conflictRows.length,
    },
  };
}
