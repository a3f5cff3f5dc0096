import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { ConflictError } from '../errors.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';
import { requireRoom } from './quotas.js';
import { requireTenant, tenantExists } from './tenant-lookup.js';
import { type IssuedToken, insertToken } from './tokens.js';

/**
 * The identifier types a new tenant starts with (design §5); it changes them through
 * identity/identifier-types.ts, which sits above tenancy and so cannot be asked here.
 */
const DEFAULT_IDENTIFIER_TYPES = [
  { type: 'cookie', tier: 'weak', max_per_profile: null },
  { type: 'device_id', tier: 'weak', max_per_profile: null },
  { type: 'email', tier: 'strong', max_per_profile: 5 },
  { type: 'phone', tier: 'strong', max_per_profile: 5 },
] as const;

/**
 * Creates a tenant with its workspaces and the default identifier types of design §5, and issues
 * its first tenant token, all in one transaction.
 */
export async function createTenant(
  context: Context,
  tenantId: string,
  workspaceIds: string[],
): Promise<IssuedToken> {
  return context.store.write(async (session) => {
    if (await tenantExists(session, tenantId))
      throw new ConflictError(`tenant ${tenantId} already exists`);
    const now = nowIso(context);
    await session.run('insert_tenant', { tenant_id: tenantId, now });
    const workspaces = new Set(workspaceIds);
    await requireRoom(session, context.config, tenantId, 'workspaces', workspaces.size);
    for (const workspaceId of workspaces) {
      await session.run('insert_workspace', {
        tenant_id: tenantId,
        workspace_id: workspaceId,
        display_name: null,
        allowed_origins: null,
        consent_categories: null,
        consent_default: null,
        now,
      });
    }
    for (const type of DEFAULT_IDENTIFIER_TYPES) {
      await session.run('upsert_identifier_type', {
        tenant_id: tenantId,
        identifier_type: type.type,
        tier: type.tier,
        max_per_profile: type.max_per_profile,
        now,
      });
    }
    return insertToken(session, now, {
      tenantId,
      kind: 'tenant',
      workspaceId: null,
      name: 'initial tenant token',
    });
  });
}

/** Another tenant token for an existing tenant (operator only). */
export async function issueTenantToken(
  context: Context,
  tenantId: string,
  name: string | null,
): Promise<IssuedToken> {
  return context.store.write(async (session) => {
    await requireTenant(session, tenantId);
    await requireRoom(session, context.config, tenantId, 'tokens');
    return insertToken(session, nowIso(context), {
      tenantId,
      kind: 'tenant',
      workspaceId: null,
      name,
    });
  });
}

export interface TenantSummary {
  tenant_id: string;
  created_at: string;
  workspaces: number;
}

const tenantCursor = z.strictObject({ t: z.string() });

export async function listTenants(
  context: Context,
  query: PageQuery,
): Promise<Page<TenantSummary>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, tenantCursor);
  const rows = await context.store.read((session) =>
    session.all<TenantSummary>('list_tenants_page', {
      after_tenant: after?.t ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ t: row.tenant_id }),
    (row) => row,
  );
}
