import { type Context, nowIso } from '../context.js';
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

export async function listIdentifierTypes(
  context: Context,
  tenantId: string,
): Promise<IdentifierType[]> {
  return context.store.read((session) =>
    session.all<IdentifierType>('list_identifier_types', { tenant_id: tenantId }),
  );
}
