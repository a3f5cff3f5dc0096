import type { Context } from '../context.js';
import { requireTenant } from '../tenancy/tenant-lookup.js';

/**
 * Values that are noise for every type and every tenant, by type (`*` for any type); compared
 * after normalisation. A Map: identifier types are tenants' names (`constructor` is one).
 */
export const BUILT_IN_PLACEHOLDERS: ReadonlyMap<string, readonly string[]> = new Map([
  ['*', ['null', 'undefined', 'none', 'n/a', 'na', '-', 'unknown', '0']],
  ['email', ['test@test.com', 'test@example.com', 'noreply@example.com']],
  ['phone', ['0000000000', '+910000000000', '1234567890', '+911234567890']],
]);

/**
 * Placeholder values by identifier type (`*` for any type), as JSON answers them. Built only
 * with Object.fromEntries, which defines own keys: a type may be named `constructor`.
 */
export type PlaceholderValues = Record<string, string[]>;

export interface Placeholders {
  values: PlaceholderValues;
  built_in: PlaceholderValues;
}

function groupByType(rows: { identifier_type: string; value: string }[]): PlaceholderValues {
  const values = new Map<string, string[]>();
  for (const row of rows) {
    values.set(row.identifier_type, [...(values.get(row.identifier_type) ?? []), row.value]);
  }
  return Object.fromEntries(values);
}

function builtIns(): PlaceholderValues {
  return Object.fromEntries([...BUILT_IN_PLACEHOLDERS].map(([type, list]) => [type, [...list]]));
}

/**
 * Replaces the tenant's own placeholder list. Values are stored lowercased and trimmed, the way
 * identifiers are compared; the built-in list always applies on top.
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
      list.map((value) => ({ identifier_type: type, value: value.trim().toLowerCase() })),
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
