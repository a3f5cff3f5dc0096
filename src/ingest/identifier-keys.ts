import {
  normalizeInJs,
  PlaceholderRules,
  type RawIdentifier,
} from '../identity/identifier-values.js';
import type { Session } from '../store/session.js';
import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import type { KeyRing } from '../tenant-keys.js';
import type { Candidates } from './duplicates.js';

export interface TenantRules {
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

/** Each candidate line's declared identifiers, raw, in the order the line gives them. */
export type Identifiers = TemporaryTable<'ingest_identifiers'>;

/**
 * Reads the identifiers of the candidate lines (design §10). Runs once duplicates are set aside,
 * so a replayed file's lines are not keyed again.
 */
export async function extractIdentifiers(candidates: Candidates): Promise<Identifiers> {
  const session = sessionOf(candidates.lines);
  await session.run('ingest_extract_identifiers');
  return temporaryTable(session, 'ingest_identifiers');
}

/** Each distinct identifier value of the batch once, normalised where SQL can. */
export type IdentifierValues = TemporaryTable<'ingest_values'>;

export async function distinctValues(identifiers: Identifiers): Promise<IdentifierValues> {
  const session = sessionOf(identifiers);
  await session.run('ingest_distinct_values');
  return temporaryTable(session, 'ingest_values');
}

/** The batch's keyed values, numbered (`key_id`): without placeholders and unparsable values. */
export type KeyMap = TemporaryTable<'ingest_id_map'>;

export interface KeyedValues {
  keyMap: KeyMap;
  /** The rules of the batch's tenants, which resolution needs too (`max_per_profile`). */
  rules: TenantRules;
  /** Values dropped as placeholders or unparsable: an expected outcome, counted. */
  dropped: number;
}

/**
 * Keys each distinct identifier value (design §10): SQL normalises what it can, JS the rest,
 * placeholders are dropped, and SQL computes the HMAC keys. Needs every distinct value first,
 * since JS gets the values SQL cannot normalise, each once.
 */
export async function keyValues(values: IdentifierValues, keyRing: KeyRing): Promise<KeyedValues> {
  const session = sessionOf(values);
  const tenants = (await session.all<{ tenant_id: string }>('ingest_batch_tenants')).map(
    (row) => row.tenant_id,
  );
  const rules = await loadRules(session, tenants);
  await session.run('ingest_create_keying_tables');
  const pads = temporaryTable(session, 'ingest_lookup_pads');
  await session.appendTemporary(
    pads.name,
    tenants.map((tenantId) => {
      const tenantPads = keyRing.forTenant(tenantId).lookupPads();
      return [tenantId, tenantPads.inner, tenantPads.outer];
    }),
  );
  const inJs = await session.all<RawIdentifier>('ingest_values_for_js');
  await session.appendTemporary(
    temporaryTable(session, 'ingest_js_normalized').name,
    normalizeInJs(inJs, rules.placeholders),
  );
  await session.run('ingest_key_values', { placeholders: rules.placeholders.toJson() });
  const dropped = (await session.one<{ dropped: number }>('ingest_dropped_values'))?.dropped ?? 0;
  return { keyMap: temporaryTable(session, 'ingest_id_map'), rules, dropped };
}

/** Each candidate line's key numbers, in its order; the lists that turn numbers into keys. */
export interface EventKeys {
  /** One row per candidate line that kept an identifier. */
  eventKeys: TemporaryTable<'ingest_event_keys'>;
  /** The keys and their types, indexed by `key_id`. */
  keyLists: TemporaryTable<'ingest_key_lists'>;
}

/** Gives each candidate line its keys, which its raw values find in the key map: runs after it. */
export async function groupEventKeys(
  candidates: Candidates,
  identifiers: Identifiers,
  keyMap: KeyMap,
): Promise<EventKeys> {
  const session = sessionOf(candidates.lines, identifiers, keyMap);
  await session.run('ingest_group_event_keys');
  return {
    eventKeys: temporaryTable(session, 'ingest_event_keys'),
    keyLists: temporaryTable(session, 'ingest_key_lists'),
  };
}
