import type { Context } from '../context.js';
import { requireTenant } from '../tenancy/tenant-lookup.js';
import { normalizeIdentifier } from './normalize.js';

/** The type whose placeholders apply to every type: compared as text, since no one type parses them. */
export const ANY_TYPE = '*';

/**
 * A placeholder in the form the values it should drop take (design §10): a phone as E.164 when it
 * parses, so `9999999999` also drops `+91 99999 99999` and `099999 99999`; anything else, and a
 * phone that does not parse, trimmed and lowercased, as placeholders are compared.
 */
export function normalizePlaceholder(type: string, value: string): string {
  const typed = value.trim().toLowerCase();
  return type === 'phone' ? (normalizeIdentifier('phone', value) ?? typed) : typed;
}

/** Values that are noise for every type and every tenant, as written in the docs. */
const BUILT_IN_AS_WRITTEN: readonly [string, readonly string[]][] = [
  [ANY_TYPE, ['null', 'undefined', 'none', 'n/a', 'na', '-', 'unknown', '0']],
  ['email', ['test@test.com', 'test@example.com', 'noreply@example.com']],
  ['phone', ['0000000000', '+910000000000', '1234567890', '+911234567890']],
];

let builtIn: ReadonlyMap<string, readonly string[]> | undefined;

/**
 * The built-in placeholders by type, normalised once, when first asked for: normalising a phone
 * loads libphonenumber, which a process that never meets an identifier does not need. A Map: a
 * type may be named `constructor`.
 */
export function builtInPlaceholders(): ReadonlyMap<string, readonly string[]> {
  builtIn ??= new Map(
    BUILT_IN_AS_WRITTEN.map(([type, values]) => [
      type,
      [...new Set(values.map((value) => normalizePlaceholder(type, value)))],
    ]),
  );
  return builtIn;
}

/**
 * Placeholder values by identifier type (`*` for any type), as JSON answers them. Built only
 * with Object.fromEntries, which defines own keys: a type may be named `constructor`.
 */
export type PlaceholderValues = Record<string, string[]>;

export interface Placeholders {
  values: PlaceholderValues;
  built_in: PlaceholderValues;
}

/** Grouped in a Map, then copied out with own properties only: no type name reaches a prototype. */
function groupByType(rows: { identifier_type: string; value: string }[]): PlaceholderValues {
  const values = new Map<string, string[]>();
  for (const row of rows)
    values.set(row.identifier_type, [...(values.get(row.identifier_type) ?? []), row.value]);
  return Object.fromEntries(values);
}

function builtIns(): PlaceholderValues {
  return Object.fromEntries([...builtInPlaceholders()].map(([type, list]) => [type, [...list]]));
}

/**
 * Replaces the tenant's own placeholder list. Values are stored normalised for their type
 * (`normalizePlaceholder`), once, so ingest compares normalised to normalised; the built-in list
 * always applies on top.
 */
export async function putPlaceholders(
  context: Context,
  tenantId: string,
  values: PlaceholderValues,
): Promise<Placeholders> {
  return context.store.write(async (session) => {
    await requireTenant(session, tenantId);
    await session.run('delete_placeholders', { tenant_id: tenantId });
    const entries = Object.entries(values).flatMap(([type, list]) =>
      list.map((value) => ({ identifier_type: type, value: normalizePlaceholder(type, value) })),
    );
    if (entries.length > 0) {
      await session.run('insert_placeholders', {
        tenant_id: tenantId,
        entries: JSON.stringify(entries),
      });
    }
    const rows = await session.all<{ identifier_type: string; value: string }>(
      'list_placeholders',
      { tenant_id: tenantId },
    );
    return { values: groupByType(rows), built_in: builtIns() };
  });
}

export async function getPlaceholders(context: Context, tenantId: string): Promise<Placeholders> {
  const rows = await context.store.read((session) =>
    session.all<{ identifier_type: string; value: string }>('list_placeholders', {
      tenant_id: tenantId,
    }),
  );
  return { values: groupByType(rows), built_in: builtIns() };
}
