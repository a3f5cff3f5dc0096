import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import type { Context } from '../../src/context.js';
import { createTenant } from '../../src/tenancy/tenants.js';
import { issueToken, revokeToken } from '../../src/tenancy/tokens.js';

export interface Tokens {
  tenant: string;
  workspace: string;
  otherWorkspace: string;
  collector: string;
  revoked: string;
  otherTenant: string;
}

/** Tenant `acme` (workspaces `eu`, `us`) and tenant `globex` (workspace `eu`), with a token of each kind. */
export async function seedTenants(context: Context): Promise<Tokens> {
  const tenant = await createTenant(context, 'acme', ['eu', 'us']);
  const otherTenant = await createTenant(context, 'globex', ['eu']);
  const workspace = await issueToken(context, 'acme', {
    kind: 'workspace',
    workspaceId: 'eu',
    name: 'eu reader',
  });
  const otherWorkspace = await issueToken(context, 'acme', {
    kind: 'workspace',
    workspaceId: 'us',
    name: 'us reader',
  });
  const collector = await issueToken(context, 'acme', {
    kind: 'collector',
    workspaceId: null,
    name: 'backend',
  });
  const revoked = await issueToken(context, 'acme', {
    kind: 'workspace',
    workspaceId: 'eu',
    name: 'old',
  });
  await revokeToken(context, 'acme', revoked.token_id);
  return {
    tenant: tenant.token,
    workspace: workspace.token,
    otherWorkspace: otherWorkspace.token,
    collector: collector.token,
    revoked: revoked.token,
    otherTenant: otherTenant.token,
  };
}

/** `inject` with a bearer token and a JSON body. */
export function call(
  app: FastifyInstance,
  token: string | null,
  method: InjectOptions['method'],
  url: string,
  body?: unknown,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method,
    url,
    headers: token ? { authorization: `Bearer ${token}` } : {},
    ...(body === undefined ? {} : { payload: body as object }),
  });
}
