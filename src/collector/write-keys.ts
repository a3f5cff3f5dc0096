import type { FastifyRequest } from 'fastify';
import { OriginNotAllowedError } from '../errors.js';
import { originAllowedFor } from './origins.js';
import type { WriteKeyPrincipal } from './registry.js';
import type { CollectorRuntime } from './runtime.js';
import type { WorkspaceScope } from './tracking-api/intake.js';

/**
 * A page may use a browser write key only from an origin its workspace allows. A request without
 * an Origin is no page's (a crawler, a test, a server): it is held to browser trust all the same.
 */
export function checkPageOrigin(
  runtime: CollectorRuntime,
  request: FastifyRequest,
  principal: WriteKeyPrincipal,
): void {
  const origin = request.headers.origin;
  if (origin === undefined || origin === '') return;
  if (!originAllowedFor(runtime, origin, principal.tenantId, principal.workspaceId))
    throw new OriginNotAllowedError(origin);
}

/** What a write key's messages are: browser events of its workspace, by the Tracking API mapping. */
export function writeKeyScope(principal: WriteKeyPrincipal): WorkspaceScope {
  return {
    source: 'browser',
    intake: 'segment_api',
    tenantId: principal.tenantId,
    workspaceId: principal.workspaceId,
  };
}

/**
 * The budget key of a workspace's browser requests, shared by every browser endpoint. Registry
 * ids never hold a slash, so the pair makes one unambiguous key.
 */
export function workspaceBudget(tenantId: string, workspaceId: string): string {
  return `${tenantId}/${workspaceId}`;
}
