import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { NotFoundError } from '../errors.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';
import type { Session } from '../store/session.js';
import { requireRoom } from './quotas.js';

export const workspaceSchema = z.object({
  workspace_id: z.string(),
  display_name: z.string().nullable(),
  /** Browser origins this workspace takes events from, besides the operator's `cors_origins`. */
  allowed_origins: z.array(z.string()),
  /** The consent categories its events and segments name (docs/decisions.md "Consent"). */
  consent_categories: z.array(z.string()),
  /** What a category no event of a profile chose means: `allow` or `deny`. */
  consent_default: z.enum(['allow', 'deny']),
  created_at: z.string(),
  updated_at: z.string(),
});

export type Workspace = z.infer<typeof workspaceSchema>;

export async function findWorkspace(
  session: Session,
  tenantId: string,
  workspaceId: string,
): Promise<Workspace | null> {
  return session.one<Workspace>('get_workspace', {
    tenant_id: tenantId,
    workspace_id: workspaceId,
  });
}

export async function requireWorkspace(
  session: Session,
  tenantId: string,
  workspaceId: string,
): Promise<Workspace> {
  const workspace = await findWorkspace(session, tenantId, workspaceId);
  if (!workspace)
    throw new NotFoundError(`workspace ${workspaceId} does not exist in tenant ${tenantId}`);
  return workspace;
}

/** What a PUT sets; allowed origins left out (null) stay as stored, or none on a new workspace. */
export interface WorkspaceFields {
  displayName: string | null;
  allowedOrigins: string[] | null;
  consentCategories: string[] | null;
  consentDefault: 'allow' | 'deny' | null;
}

/** Creates the workspace or changes it; `created` tells which. */
export async function putWorkspace(
  context: Context,
  tenantId: string,
  workspaceId: string,
  fields: WorkspaceFields,
): Promise<{ workspace: Workspace; created: boolean }> {
  return context.store.write(async (session) => {
    const params = {
      tenant_id: tenantId,
      workspace_id: workspaceId,
      display_name: fields.displayName,
      allowed_origins: fields.allowedOrigins && JSON.stringify([...new Set(fields.allowedOrigins)]),
      consent_categories:
        fields.consentCategories && JSON.stringify([...new Set(fields.consentCategories)]),
      consent_default: fields.consentDefault,
      now: nowIso(context),
    };
    const existing = await findWorkspace(session, tenantId, workspaceId);
    if (!existing) await requireRoom(session, context.config, tenantId, 'workspaces');
    await session.run(existing ? 'update_workspace' : 'insert_workspace', params);
    return {
      workspace: await requireWorkspace(session, tenantId, workspaceId),
      created: !existing,
    };
  });
}

const workspaceCursor = z.strictObject({ w: z.string() });

export async function listWorkspaces(
  context: Context,
  tenantId: string,
  query: PageQuery,
): Promise<Page<Workspace>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, workspaceCursor);
  const rows = await context.store.read((session) =>
    session.all<Workspace>('list_workspaces_page', {
      tenant_id: tenantId,
      after_workspace: after?.w ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ w: row.workspace_id }),
    (row) => row,
  );
}
