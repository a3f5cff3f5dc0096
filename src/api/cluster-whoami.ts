import type { FastifyRequest } from 'fastify';
import { OwnerUnavailableError } from '../errors.js';
import type { ClusterView } from '../shards/cluster-view.js';
import { forwardingHeaders } from './forward.js';

export interface OwnerAnswer {
  status: number;
  contentType: string | null;
  body: string;
}

/**
 * Asks the owner of every other shard that holds tenants who the request's token is, for a token
 * this owner does not know (it names no tenant, so no map says where it lives). The first answer
 * other than 401 is the answer; null when every owner said 401. When some owner could not be asked, its tenants'
 * tokens cannot be told from unknown ones: 503, not a 401 that would say the token is bad.
 */
export async function askOtherOwners(
  cluster: ClusterView,
  masterKey: Buffer,
  request: FastifyRequest,
  path: string,
): Promise<OwnerAnswer | null> {
  const unreachable: string[] = [];
  const answers = cluster.otherShards().map(async (shard) => {
    const owner = cluster.owners.of(shard);
    const answer = owner
      ? await askOwner(owner.url, path, {
          authorization: request.headers.authorization ?? '',
          ...forwardingHeaders(cluster.shard, masterKey, request),
        })
      : null;
    if (answer === null) unreachable.push(shard);
    return answer;
  });
  const known = answers.map((answer) =>
    answer.then((found) =>
      found !== null && found.status !== 401 ? found : Promise.reject(new Error('no answer')),
    ),
  );
  try {
    return await Promise.any(known);
  } catch {
    if (unreachable.length > 0)
      throw new OwnerUnavailableError(
        unreachable.join(', '),
        'it could not be asked about this token',
      );
    return null;
  }
}

/** One owner's answer, or null if it gave none. */
async function askOwner(
  ownerUrl: string,
  path: string,
  headers: Record<string, string>,
): Promise<OwnerAnswer | null> {
  try {
    const response = await fetch(new URL(path, ownerUrl), {
      headers,
      signal: AbortSignal.timeout(5_000),
    });
    return {
      status: response.status,
      contentType: response.headers.get('content-type'),
      body: await response.text(),
    };
  } catch {
    return null;
  }
}
