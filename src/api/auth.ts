import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Context } from '../context.js';
import { UnauthorizedError, ValidationError } from '../errors.js';
import { RateLimiter } from '../rate-limit.js';
import { type Access, type AccessTarget, authorize } from '../tenancy/access.js';
import { isOperatorToken } from '../tenancy/operator.js';
import { requireTenant } from '../tenancy/tenant-lookup.js';
import { authenticateToken, type Principal } from '../tenancy/tokens.js';
import { clientAddress } from './client-address.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Who may call the route; routes without it take no token. */
    access?: Access;
  }
  interface FastifyRequest {
    principal: Principal;
  }
}

const OPERATOR: Principal = {
  kind: 'operator',
  tokenId: 'operator',
  tenantId: null,
  workspaceId: null,
};

export function bearerToken(request: FastifyRequest): string | null {
  const header = request.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1] ?? null;
}

/**
 * Whether a route open to all (`/readyz`) was called with the operator credential, which shows it
 * in full; any other token, or none, is the anonymous caller there.
 */
export function isOperatorRequest(context: Context, request: FastifyRequest): boolean {
  const token = bearerToken(request);
  return token !== null && isOperatorToken(context.dataDir.masterKey, token);
}

export async function authenticate(context: Context, request: FastifyRequest): Promise<Principal> {
  const token = bearerToken(request);
  if (!token) throw new UnauthorizedError('missing bearer token (Authorization: Bearer <token>)');
  if (isOperatorToken(context.dataDir.masterKey, token)) return OPERATOR;
  const principal = await context.store.read((session) => authenticateToken(session, token));
  if (!principal) throw new UnauthorizedError('unknown or revoked token');
  return principal;
}

/**
 * The workspace a request is about: the path's, else the `workspace_id` query. A workspace token
 * that names none is taken to mean its own workspace.
 */
export function requestedWorkspace(
  request: FastifyRequest,
  principal: Principal = request.principal,
): string | undefined {
  const params = request.params as Record<string, string | undefined>;
  const query = request.query as Record<string, unknown> | undefined;
  const named =
    params.workspace ?? (typeof query?.workspace_id === 'string' ? query.workspace_id : undefined);
  if (named !== undefined) return named;
  return principal.kind === 'workspace' ? (principal.workspaceId ?? undefined) : undefined;
}

/** As `requestedWorkspace`, for reads that need one: a tenant token must name it (422). */
export function requiredWorkspace(request: FastifyRequest): string {
  const workspaceId = requestedWorkspace(request);
  if (workspaceId === undefined) throw ValidationError.field('workspace_id', 'is required');
  return workspaceId;
}

function accessTarget(request: FastifyRequest, principal: Principal): AccessTarget {
  const params = request.params as Record<string, string | undefined>;
  return { tenantId: params.tenant, workspaceId: requestedWorkspace(request, principal) };
}

/**
 * The request's token checked again against its route's access, as on arrival: the same look-up
 * and the same rules, so an answer held open (a live stream) refuses what a new request would.
 * Throws the 401 or 403 that request would get. No rate limit: those count requests.
 */
export async function recheckAccess(context: Context, request: FastifyRequest): Promise<void> {
  const access = request.routeOptions.config.access;
  if (!access) return;
  const principal = await authenticate(context, request);
  authorize(principal, access, accessTarget(request, principal));
}

/**
 * Authenticates, rate-limits and authorises on `onRequest`, before the body is parsed or
 * validated, so that a caller without the right gets 401/403 (or 429) whatever it sends.
 */
export function registerAuth(app: FastifyInstance, context: Context): void {
  const perToken = new RateLimiter(context.config.control_plane_rate_limit, context.clock);
  const refusedPerAddress = new RateLimiter(context.config.refused_rate_limit, context.clock);
  // Set by the hook below before any route that declares `access` runs.
  app.decorateRequest('principal', null as never);
  const admit = async (request: FastifyRequest, access: Access) => {
    // An address that keeps presenting bad tokens is refused before its next token is looked up.
    const address = clientAddress(context.dataDir.masterKey, request);
    refusedPerAddress.check(address);
    try {
      request.principal = await authenticate(context, request);
    } catch (error) {
      if (error instanceof UnauthorizedError) refusedPerAddress.take(address);
      throw error;
    }
    // Counted before authorisation, so a token probing other tenants spends its own budget.
    perToken.take(request.principal.tokenId);
    authorize(request.principal, access, accessTarget(request, request.principal));
  };
  // A callback hook: the requests of routes without access (the collector's) pass it without a
  // promise and a turn of the microtask queue each.
  app.addHook('onRequest', (request, _reply, done) => {
    const access = request.routeOptions.config.access;
    if (!access) {
      done();
      return;
    }
    admit(request, access).then(() => done(), done);
  });
  // A tenant or workspace token belongs to a tenant that exists; the operator may name any, and a
  // tenant that is not there is a 404 saying so, not an empty list or a missing workspace. After
  // validation, as every 404 (order of checks).
  app.addHook('preHandler', (request, _reply, done) => {
    const tenantId = (request.params as Record<string, string | undefined> | undefined)?.tenant;
    if (
      !request.routeOptions.config.access ||
      request.principal?.kind !== 'operator' ||
      !tenantId
    ) {
      done();
      return;
    }
    context.store.read((session) => requireTenant(session, tenantId)).then(() => done(), done);
  });
}
