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
  // A forwarded request is logged as every request is, its line naming the shard (base-app.ts).
  app.register(replyFrom.default, { disableRequestLogging: true });
  app.decorateRequest('forwardedTo', null);

  const masterKey = context.dataDir.masterKey;
  // Callback hooks: every request passes them, the collector's too, and most with nothing to do
  // here; an async hook would cost each a promise and a turn of the microtask queue. A hook that
  // answers the request itself does not call `done`.
  app.addHook('onRequest', (request, reply, done) => {
    const tenant = tenantOfRoute(request);
    const answering =
      tenant !== null
        ? forwardIfElsewhere(cluster, masterKey, request, reply, tenant)
        : request.routeOptions.url === '/v1/whoami' && !wasForwarded(request)
          ? whoamiAnywhere(context, cluster, request, reply)
          : null;
    if (answering === null) done();
    else answering.then((answered) => (answered ? undefined : done()), done);
  });

  app.addHook('preHandler', (request, reply, done) => {
    if (request.routeOptions.url !== '/v1/operator/tenants') {
      done();
      return;
    }
    tenantsAcrossShards(context, cluster, request, reply).then(
      (answered) => (answered ? undefined : done()),
      done,
    );
  });
}

/** Forwards a tenant's request to the owner of its shard; false when it is answered here. */
async function forwardIfElsewhere(
  cluster: ClusterView,
  masterKey: Buffer,
  request: FastifyRequest,
  reply: FastifyReply,
  tenantId: string,
): Promise<boolean> {
  const shard = await shardAnswering(cluster, request, tenantId);
  if (shard === null) return false;
  forwardToShard(cluster, masterKey, request, reply, shard);
  return true;
}

/**
 * The operator's tenants route on every owner: the list merged across shards; a new tenant
 * placed, then created on its shard (here, or forwarded). False when this owner answers it alone.
 */
async function tenantsAcrossShards(
  context: Context,
  cluster: ClusterView,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  if (request.method === 'GET' && !wasForwarded(request)) {
    const page = await clusterTenantPage(
      context,
      cluster,
      request,
      request.query as { limit: number; cursor?: string },
    );
    reply.send({ tenants: page.items, next_cursor: page.next_cursor });
    return true;
  }
  if (request.method !== 'POST') return false;
  const { tenant_id } = request.body as { tenant_id: string };
  const { assignment } = await placeTenant(cluster, tenant_id);
  if (assignment.state !== 'active')
    throw new TenantMovingError(tenant_id, assignment.shard, assignment.to);
  if (assignment.shard === cluster.shard) return false;
  forwardToShard(cluster, context.dataDir.masterKey, request, reply, assignment.shard);
  return true;
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

/** `whoami` with a token this owner does not know: the answer of an owner that knows it. */
async function whoamiAnywhere(
  context: Context,
  cluster: ClusterView,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<boolean> {
  const token = bearerToken(request);
  if (token === null || !isWellFormedToken(token)) return false;
  try {
    await authenticate(context, request);
    return false;
  } catch (error) {
    if (!(error instanceof UnauthorizedError)) throw error;
  }
  const answer = await askOtherOwners(cluster, context.dataDir.masterKey, request, '/v1/whoami');
  if (answer === null) return false;
  if (answer.contentType) reply.header('content-type', answer.contentType);
  reply.code(answer.status).send(answer.body);
  return true;
}
