import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';
import { requireRoom } from '../tenancy/quotas.js';
import { requireTenant } from '../tenancy/tenant-lookup.js';

export const tierSchema = z.enum(['strong', 'weak']);

/** An identifier type as the API answers and the store keeps it (design §5). */
export const identifierTypeSchema = z.object({
  type: z.string(),
  tier: tierSchema,
  max_per_profile: z.number().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type Tier = z.infer<typeof tierSchema>;
export type IdentifierType = z.infer<typeof identifierTypeSchema>;

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
