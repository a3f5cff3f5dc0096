import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { BadRequestError, ForbiddenError, NotFoundError, UnauthorizedError } from '../../errors.js';
import type { RateLimiter } from '../../rate-limit.js';
import { countIntake } from '../../telemetry/prometheus.js';
import { parseBody } from '../batch-intake.js';
import { acceptedAs, scopeFor } from '../event-sink.js';
import type { WriteKeyPrincipal } from '../registry.js';
import type { CollectorRuntime } from '../runtime.js';
import {
  checkTrackingBatchBody,
  checkTrackingMessage,
  type TrackingRequest,
  writeKeyIn,
} from '../tracking-api/intake.js';
import { writeKeyOfHeader } from '../tracking-api/routes.js';
import type { TrackingCall } from '../tracking-api/spec.js';
import { checkPageOrigin, workspaceBudget, writeKeyScope } from '../write-keys.js';
import { AnalyticsLibrary } from './library.js';
import { settingsDocument, sourceConfigDocument } from './settings.js';

/** The collector's limiters these endpoints share with the browser collector. */
export interface AnalyticsJsLimiters {
  /** Requests per second of each workspace, as `/v1/events` spends them. */
  perWorkspace: RateLimiter;
  /** Requests per second one address may have refused. */
  refusedPerAddress: RateLimiter;
}

/** analytics.js names its endpoints by the first letter of the call (`/v1/t` for track, …). */
const CALLS: [string, TrackingCall][] = [
  ['t', 'track'],
  ['i', 'identify'],
  ['p', 'page'],
  ['g', 'group'],
  ['a', 'alias'],
  ['s', 'screen'],
];

/** A host as a request names it: a name or an IPv4 address, or an IPv6 one in brackets, a port. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

const WRITE_KEY = z.string().regex(/^cpk_[0-9A-Za-z]{49}$/, 'is not a write key (cpk_…)');

/**
 * The origin this cds is reached at, as the request names it (its scheme, behind `trustProxy`,
 * and its Host): where the library and its settings say to send events. A Host that is no host
 * name is refused, so nothing else is ever written into the library or the settings.
 */
function servedOrigin(request: FastifyRequest): string {
  const host = request.host;
  if (!HOST.test(host)) throw new BadRequestError('the Host header is not a host name');
  return `${request.protocol}://${host}`;
}

const HOW_TO_SEND =
  'send a browser write key (cpk_…, POST /v1/tenants/{tenant}/tokens with kind "write_key") as the Basic auth username, or as writeKey in the body';

/** The workspace of a write key; 401 for none or an unknown one, 403 for another kind of token. */
function writeKeyPrincipal(runtime: CollectorRuntime, key: string | undefined): WriteKeyPrincipal {
  if (key === undefined || key === '')
    throw new UnauthorizedError(`missing write key: ${HOW_TO_SEND}`);
  const principal = runtime.registry.authenticateWriteKey(key);
  if (principal) return principal;
  if (/^cp[twc]_/.test(key))
    throw new ForbiddenError(`this is not a browser write key: ${HOW_TO_SEND}`);
  throw new UnauthorizedError('unknown or revoked write key');
}

function addCors(request: FastifyRequest, reply: FastifyReply): void {
  reply.header('vary', 'Origin');
  const origin = request.headers.origin;
  if (origin) reply.header('access-control-allow-origin', origin);
  reply.header('access-control-expose-headers', 'retry-after');
}

/**
 * Segment's analytics.js served and answered by cds (issue 39; docs/decisions.md "analytics.js
 * from cds"): the library and its chunks from the pinned npm package, its settings, and its
 * endpoints (`/v1/t`, `/v1/i`, …, `/v1/b` for batches, `/v1/m` for the metrics it is told not to
 * send), for browser write keys. Events are browser events of the key's workspace, at browser
 * trust, counted against the workspace's budget as the browser collector's.
 */
export async function analyticsJsRoutes(
  app: FastifyInstance,
  runtime: CollectorRuntime,
  limiters: AnalyticsJsLimiters,
): Promise<void> {
  const { perWorkspace, refusedPerAddress } = limiters;
  const library = new AnalyticsLibrary();

  const admit = (request: FastifyRequest, key: () => string | undefined): WriteKeyPrincipal => {
    let principal: WriteKeyPrincipal;
    try {
      principal = writeKeyPrincipal(runtime, key());
      checkPageOrigin(runtime, request, principal);
    } catch (error) {
      refusedPerAddress.take(request.ip);
      throw error;
    }
    perWorkspace.take(workspaceBudget(principal.tenantId, principal.workspaceId));
    return principal;
  };

  const requestIn = (principal: WriteKeyPrincipal): TrackingRequest => ({
    scope: scopeFor(runtime.sink, writeKeyScope(principal)),
    receivedAt: runtime.clock.now().toISOString(),
    collectorId: runtime.sink.collectorId,
    form: runtime.sink.form,
  });

  /** The key of the Authorization header, else of the body, with the body parsed. */
  const admitted = (request: FastifyRequest, text: string) => {
    const authorization = request.headers.authorization;
    if (authorization !== undefined && authorization !== '') {
      const principal = admit(request, () => writeKeyOfHeader(authorization));
      return { principal, body: parseBody(text) };
    }
    refusedPerAddress.check(request.ip);
    const body = parseBody(text);
    return { principal: admit(request, () => writeKeyIn(body)), body };
  };

  app.get<{ Params: { key: string } }>(
    '/analytics.js/v1/:key/analytics.min.js',
    async (request, reply) => {
      const key = WRITE_KEY.safeParse(request.params.key);
      if (!key.success || !runtime.registry.authenticateWriteKey(key.data))
        throw new NotFoundError('no active write key here by that name');
      const text = await library.standalone(servedOrigin(request));
      return reply
        .header('content-type', 'text/javascript; charset=utf-8')
        .header('cache-control', 'public, max-age=300')
        .send(text);
    },
  );
  app.get<{ Params: { file: string } }>('/analytics-next/bundles/:file', async (request, reply) => {
    const text = await library.chunk(request.params.file, servedOrigin(request));
    if (text === null) throw new NotFoundError(`no analytics.js chunk ${request.params.file}`);
    return reply
      .header('content-type', 'text/javascript; charset=utf-8')
      .header('cache-control', 'public, max-age=86400, immutable')
      .send(text);
  });

  // Preflights are the browser collector's (collector/cors.ts): the same origins, and the
  // headers analytics.js sends.
  await app.register(async (browser) => {
    await browser.register(async (requests) => {
      requests.addHook('onRequest', (request, reply, done) => {
        addCors(request, reply);
        done();
      });
      // analytics.js sends JSON as text/plain, a CORS simple content type.
      requests.removeAllContentTypeParsers();
      requests.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) =>
        done(null, body),
      );

      requests.get<{ Params: { key: string } }>(
        '/v1/projects/:key/settings',
        async (request, reply) => {
          const key = WRITE_KEY.safeParse(request.params.key);
          const principal = key.success ? runtime.registry.authenticateWriteKey(key.data) : null;
          if (!key.success || !principal)
            throw new NotFoundError('no active write key here by that name');
          checkPageOrigin(runtime, request, principal);
          return reply
            .header('cache-control', 'private, max-age=60')
            .send(
              settingsDocument(
                key.data,
                servedOrigin(request),
                runtime.registry.consentCategories(principal.tenantId, principal.workspaceId),
              ),
            );
        },
      );

      // RudderStack's browser SDK v3 asks its config URL, with the key as Basic auth's username
      // (or in the query, as its URL also names it), and sends to /v1/track … /v1/batch, the
      // Tracking API's routes, which take a write key too.
      const sourceConfig = async (request: FastifyRequest, reply: FastifyReply) => {
        const authorization = request.headers.authorization;
        const query = request.query as Record<string, unknown>;
        const key =
          authorization !== undefined && authorization !== ''
            ? writeKeyOfHeader(authorization)
            : typeof query.writeKey === 'string'
              ? query.writeKey
              : undefined;
        const principal = admit(request, () => key);
        return reply
          .header('cache-control', 'private, max-age=60')
          .send(sourceConfigDocument(key as string, principal));
      };
      requests.get('/sourceConfig', sourceConfig);
      requests.get('/sourceConfig/', sourceConfig);

      for (const [path, call] of CALLS) {
        requests.post(`/v1/${path}`, async (request) => {
          const { principal, body } = admitted(request, String(request.body ?? ''));
          const lines = checkTrackingMessage(body, call, requestIn(principal), runtime.registry);
          await runtime.sink.append(acceptedAs(runtime.sink.form, lines));
          countIntake(lines.length, []);
          return { success: true };
        });
      }
      requests.post('/v1/b', async (request) => {
        const { principal, body } = admitted(request, String(request.body ?? ''));
        const outcome = checkTrackingBatchBody(body, requestIn(principal), runtime.registry);
        await runtime.sink.append(outcome.events);
        countIntake(outcome.accepted, outcome.rejected);
        return { success: true, accepted: outcome.accepted, rejected: outcome.rejected };
      });
      // The library's own metrics: its settings turn them off; any that come are dropped.
      requests.post('/v1/m', async () => ({ success: true }));
    });
  });
}
