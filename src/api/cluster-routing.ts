import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Context } from '../context.js';
import { OwnerUnavailableError, TenantMovingError, UnauthorizedError } from '../errors.js';
import { requirePackage } from '../require-package.js';
import type { ClusterView } from '../shards/cluster-view.js';
import { placeTenant } from '../shards/placement.js';
import type { ShardAssignment } from '../shards/shard-map.js';
import { isWellFormedToken } from '../tenancy/token-format.js';
import { authenticate, bearerToken } from './auth.js';
import { clusterTenantPage } from './cluster-tenant-list.js';
import { askOtherOwners } from './cluster-whoami.js';
import { forwardToShard, wasForwarded } from './forward.js';

/** The routes whose path names the tenant: they are answered by the owner of its shard. */
const TENANT_ROUTES = ['/v1/tenants/:tenant', '/v1/operator/tenants/:tenant'];
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

function tenantOfRoute(request: FastifyRequest): string | null {
  const route = request.routeOptions.url;
  if (!route || !TENANT_ROUTES.some((prefix) => route === prefix || route.startsWith(`${prefix}/`)))
    return null;
  return (request.params as Record<string, string | undefined>).tenant ?? null;
}

/**
 * Cluster mode (issue 30, "One API, any node"): every owner answers every control-plane route.
 * - A route of a tenant on another shard is forwarded to that shard's owner before this process
 *   authenticates or reads the body (the owner does both); an unassigned tenant is answered here.
 * - While a tenant moves, its reads go to the shard it leaves and its writes are refused 503
 *   `tenant_moving`: a write taken by either side then could miss the copy or the switch.
 * - `whoami` with a token this owner does not know asks the other owners.
 * - The operator's tenant list is merged across owners; a new tenant is placed on its shard
 *   (the map's, else the default) and created there.
 * Other operator routes (backups, snapshots, exports, quarantine, webhooks) act on the shard of
 * the owner asked.
 */
export function registerClusterRouting(
  app: FastifyInstance,
  context: Context,
  cluster: ClusterView,
): void {
  const replyFrom = requirePackage<typeof import('@fastify/reply-from')>('@fastify/reply-from');
  // Each forwarded request is logged once here, with its shard (forward.ts), not twice more.
  app.register(replyFrom.default, { disableRequestLogging: true });
  app.decorateRequest('forwardedTo', null);

  app.addHook('onRequest', async (request, reply) => {
    const tenant = tenantOfRoute(request);
    if (tenant !== null) {
      const shard = await shardAnswering(cluster, request, tenant);
      if (shard !== null)
        return forwardToShard(cluster, context.dataDir.masterKey, request, reply, shard);
      return;
    }
    if (request.routeOptions.url === '/v1/whoami' && !wasForwarded(request))
      return whoamiAnywhere(context, cluster, request, reply);
  });

  app.addHook('preHandler', async (request, reply) => {
    if (request.routeOptions.url !== '/v1/operator/tenants') return;
    if (request.method === 'GET' && !wasForwarded(request)) {
      const page = await clusterTenantPage(
        context,
        cluster,
        request,
        request.query as { limit: number; cursor?: string },
      );
      return reply.send({ tenants: page.items, next_cursor: page.next_cursor });
    }
    if (request.method === 'POST') {
      const { tenant_id } = request.body as { tenant_id: string };
      const entry = await placeTenant(cluster, tenant_id);
      const { assignment } = entry;
      if (assignment.state !== 'active')
        throw new TenantMovingError(tenant_id, assignment.shard, assignment.to);
      if (assignment.shard !== cluster.shard)
        return forwardToShard(cluster, context.dataDir.masterKey, request, reply, assignment.shard);
    }
  });
}

/**
 * The shard a tenant's request must go to, or null to answer it here. A forwarded request that
 * the view here does not place on this shard is checked against the bucket once: the view may be
 * a moment behind the owner that forwarded it (a tenant just created, a move just switched).
 */
async function shardAnswering(
  cluster: ClusterView,
  request: FastifyRequest,
  tenantId: string,
): Promise<string | null> {
  let placement: ShardAssignment | null = cluster.placement(tenantId);
  if (wasForwarded(request) && placement?.shard !== cluster.shard) {
    const entry = await cluster.map.get(tenantId);
    if (entry) cluster.remember(entry);
    placement = entry?.assignment ?? null;
  }
  if (placement === null) {
    if (!wasForwarded(request)) return null;
    throw new OwnerUnavailableError(cluster.shard, 'the shard map names no shard for the tenant');
  }
  if (placement.state !== 'active' && !READS.has(request.method))
    throw new TenantMovingError(tenantId, placement.shard, placement.to);
  return placement.shard === cluster.shard ? null : placement.shard;
}

async function whoamiAnywhere(
  context: Context,
  cluster: ClusterView,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<FastifyReply | undefined> {
  const token = bearerToken(request);
  if (token === null || !isWellFormedToken(token)) return;
  try {
    await authenticate(context, request);
    return;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const answer = await askOtherOwners(cluster, context.dataDir.masterKey, request, '/v1/whoami');
  if (answer === null) return;
  if (answer.contentType) reply.header('content-type', answer.contentType);
  return reply.code(answer.status).send(answer.body);
}
