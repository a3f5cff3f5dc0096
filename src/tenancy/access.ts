import { ForbiddenError } from '../errors.js';
import type { Principal } from './tokens.js';

/**
 * What a route needs from its caller (interface "Authentication"):
 * - `tenant-token`: a tenant token of the tenant in the path (every write, tenant configuration);
 * - `tenant-member`: any tenant or workspace token of that tenant (event types, metric definitions);
 * - `workspace-member`: a tenant token, or a workspace token of the workspace the request names;
 * - `operator`: only the operator (tenant creation);
 * - `any-token`: any valid token (whoami).
 */
export type Access =
  | 'tenant-token'
  | 'tenant-member'
  | 'workspace-member'
  | 'operator'
  | 'any-token';

export interface AccessTarget {
  tenantId?: string | undefined;
  workspaceId?: string | undefined;
}

export function authorize(principal: Principal, access: Access, target: AccessTarget): void {
  if (principal.kind === 'operator' || access === 'any-token') return;
  if (access === 'operator') throw new ForbiddenError('only the operator may do this');
  if (principal.kind === 'collector') {
    throw new ForbiddenError('a collector token can only send server-side events');
  }
  if (principal.kind === 'write_key') {
    throw new ForbiddenError('a write key can only send browser events: it reads nothing');
  }
  if (target.tenantId !== principal.tenantId) {
    throw new ForbiddenError('this token belongs to another tenant');
  }
  if (principal.kind === 'tenant') return;
  if (access === 'tenant-token') {
    throw new ForbiddenError(
      'workspace tokens are read-only and see one workspace; this needs a tenant token',
    );
  }
  if (access === 'workspace-member' && target.workspaceId !== principal.workspaceId) {
    throw new ForbiddenError('this workspace token belongs to another workspace');
  }
}

/** The resources a principal can read, for `GET /v1/whoami`. */
export function readableResources(principal: Principal): string[] {
  switch (principal.kind) {
    case 'operator':
    case 'tenant':
      return [
        'workspaces',
        'tokens',
        'identifier_types',
        'placeholders',
        'event_types',
        'metric_definitions',
        'segments',
        'profiles',
        'erasures',
      ];
    case 'workspace':
      return ['event_types', 'metric_definitions', 'segments', 'profiles'];
    case 'collector':
    case 'write_key':
      return [];
  }
}
