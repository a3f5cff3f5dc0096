import type { FastifyRequest } from 'fastify';
import type { Context } from '../context.js';
import { OwnerUnavailableError } from '../errors.js';
import type { ClusterView } from '../shards/cluster-view.js';
import { encodeCursor, type Page } from '../store/cursor.js';
import { listTenants, type TenantSummary } from '../tenancy/tenants.js';
import { forwardingHeaders } from './forward.js';

/**
 * The operator's list of tenants across every shard. Each owner pages its tenants by tenant id
 * (keyset, the cursor is the last id shown), so the same cursor means the same place on every
 * owner: the owner of each shard that holds tenants is asked for `limit` tenants after it, the
 * pages are merged in id order, the first `limit` are answered and the cursor names the last of
 * them. A tenant met on two shards (a move between its copy and its switch) is listed once.
 */
export async function clusterTenantPage(
  context: Context,
  cluster: ClusterView,
  request: FastifyRequest,
  query: { limit: number; cursor?: string | undefined },
): Promise<Page<TenantSummary>> {
  const pages = await Promise.all([
    listTenants(context, { limit: query.limit, cursor: query.cursor ?? null }),
    ...cluster.otherShards().map((shard) =>
      remotePage(shard, cluster.owners.of(shard)?.url ?? null, query, {
        authorization: request.headers.authorization ?? '',
        ...forwardingHeaders(cluster.shard, context.dataDir.masterKey, request),
      }),
    ),
  ]);
  return mergePages(pages, query.limit);
}

async function remotePage(
  shard: string,
  ownerUrl: string | null,
  query: { limit: number; cursor?: string | undefined },
  headers: Record<string, string>,
): Promise<Page<TenantSummary>> {
  if (ownerUrl === null)
    throw new OwnerUnavailableError(shard, 'no owner has announced itself for it');
  const url = new URL('/v1/operator/tenants', ownerUrl);
  url.searchParams.set('limit', String(query.limit));
  if (query.cursor !== undefined) url.searchParams.set('cursor', query.cursor);
  let response: Response;
  try {
    response = await fetch(url, {
      headers,
      signal: AbortSignal.timeout(10_000),
    });
  } catch (error) {
    throw new OwnerUnavailableError(shard, (error as Error).message);
  }
  // A partial list would read as the whole one: an owner that cannot answer fails the request.
  if (response.status !== 200)
    throw new OwnerUnavailableError(shard, `it answered the list of tenants ${response.status}`);
  const body = (await response.json()) as { tenants: TenantSummary[]; next_cursor: string | null };
  return { items: body.tenants, next_cursor: body.next_cursor };
}

export function mergePages(pages: Page<TenantSummary>[], limit: number): Page<TenantSummary> {
  const byId = new Map<string, TenantSummary>();
  for (const page of pages)
    for (const tenant of page.items)
      if (!byId.has(tenant.tenant_id)) byId.set(tenant.tenant_id, tenant);
  const merged = [...byId.values()].sort((a, b) =>
    a.tenant_id < b.tenant_id ? -1 : a.tenant_id > b.tenant_id ? 1 : 0,
  );
  const items = merged.slice(0, limit);
  const last = items.at(-1);
  const more = merged.length > limit || pages.some((page) => page.next_cursor !== null);
  return {
    items,
    next_cursor: more && last !== undefined ? encodeCursor({ t: last.tenant_id }) : null,
  };
}
