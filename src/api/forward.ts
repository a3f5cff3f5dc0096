import type {} from '@fastify/reply-from';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OwnerUnavailableError } from '../errors.js';
import type { ClusterView } from '../shards/cluster-view.js';
import { prometheusSeries } from '../telemetry/prometheus.js';
import { FORWARDED_CLIENT, forwardedClientValue } from './client-address.js';

/**
 * Set on a request one owner forwards to another, naming the shard it came from. The owner it
 * reaches answers it itself or refuses it: a request is forwarded once, never in a circle
 * between two owners whose views of the map differ for a moment.
 */
export const FORWARDED_FROM = 'x-cds-forwarded-from';

declare module 'fastify' {
  interface FastifyRequest {
    /** The shard this request was forwarded to, or null when this process answers it. */
    forwardedTo: string | null;
  }
}

/**
 * What an owner adds to a request it sends to another owner: where it comes from, and the client
 * address it was sent from, signed (client-address.ts).
 */
export function forwardingHeaders(
  from: string,
  masterKey: Buffer,
  request: FastifyRequest,
): Record<string, string> {
  return {
    [FORWARDED_FROM]: from,
    [FORWARDED_CLIENT]: forwardedClientValue(masterKey, request.ip),
  };
}

export function wasForwarded(request: FastifyRequest): boolean {
  return request.headers[FORWARDED_FROM] !== undefined;
}

function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return (
    request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
  );
}

/**
 * Sends the request to the owner of `shard` as it came (method, path, query, headers with the
 * Authorization, body) and the owner's answer back as it is. A request whose body this process
 * has not read is streamed on; a parsed one is sent as the JSON it was. An owner that does not
 * answer is 503 `owner_unavailable`, never a retry: a write may have been done.
 */
export function forwardToShard(
  cluster: ClusterView,
  masterKey: Buffer,
  request: FastifyRequest,
  reply: FastifyReply,
  shard: string,
): FastifyReply {
  const owner = cluster.owners.of(shard);
  if (!owner) throw new OwnerUnavailableError(shard, 'no owner has announced itself for it');
  if (wasForwarded(request)) {
    throw new OwnerUnavailableError(
      shard,
      `forwarded here by shard ${String(request.headers[FORWARDED_FROM])}, but the shard map seen here puts the tenant on shard ${shard}`,
    );
  }
  if (request.body === undefined && hasBody(request)) request.body = request.raw;
  const path = request.raw.url?.split('?')[0] ?? '/';
  // Said in the request's log line (base-app.ts), and on the owner's as `forwarded_from`.
  request.forwardedTo = shard;
  try {
    return reply.from(owner.url.replace(/\/$/, '') + path, {
      rewriteRequestHeaders: (_request, headers) => ({
        ...headers,
        ...forwardingHeaders(cluster.shard, masterKey, request),
      }),
      retryDelay: () => null,
      onResponse: (_request, answered, response) => {
        prometheusSeries().forwardedRequests.inc({ shard, outcome: 'answered' });
        answered.send(response.stream);
      },
      onError: (failed, { error }) => {
        prometheusSeries().forwardedRequests.inc({ shard, outcome: 'unreachable' });
        failed.send(new OwnerUnavailableError(shard, error.message));
      },
    });
  } catch (error) {
    throw new OwnerUnavailableError(shard, (error as Error).message);
  }
}
