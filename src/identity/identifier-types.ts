import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';
import { requireRoom } from '../tenancy/quotas.js';
import { requireTenant } from '../tenancy/tenant-lookup.js';

export type Tier = 'strong' | 'weak';

export interface IdentifierType {
  type: string;
  tier: Tier;
  max_per_profile: number | null;
  created_at: string;
  updated_at: string;
}

/** What a new tenant starts with (design §5). */
export const DEFAULT_IDENTIFIER_TYPES: {
  type: string;
  tier: Tier;
  max_per_profile: number | null;
}[] = [
  { type: 'cookie', tier: 'weak', max_per_profile: null },
  { type: 'device_id', tier: 'weak', max_per_profile: null },
  { type: 'email', tier: 'strong', max_per_profile: 5 },
  { type: 'phone', tier: 'strong', max_per_profile: 5 },
];

export async function putIdentifierType(
  context: Context,
  tenantId: string,
  spec: { type: string; tier: Tier; maxPerProfile: number | null },
): Promise<{ identifierType: IdentifierType; created: boolean }> {
  return context.store.write(async (session) => {
    await requireTenant(session, tenantId);
    const key = { tenant_id: tenantId, identifier_type: spec.type };
    const existed = (await session.one('get_identifier_type', key)) !== null;
    if (!existed) await requireRoom(session, context.config, tenantId, 'identifier_types');
    await session.run('upsert_identifier_type', {
      ...key,
      tier: spec.tier,
      max_per_profile: spec.maxPerProfile,
      now: nowIso(context),
    });
    const identifierType = (await session.one<IdentifierType>(
      'get_identifier_type',
      key,
    )) as IdentifierType;
    return { identifierType, created: !existed };
  });
}

// Strict, and a key no other listing uses: a cursor of another listing is refused, not misread.
const identifierTypeCursor = z.object({ y: z.string() }).strict();

export async function listIdentifierTypes(
  context: Context,
  tenantId: string,
  query: PageQuery,
): Promise<Page<IdentifierType>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, identifierTypeCursor);
  const rows = await context.store.read((session) =>
    session.all<IdentifierType>('list_identifier_types_page', {
      tenant_id: tenantId,
      after_type: after?.y ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ y: row.type }),
    (row) => row,
  );
}
