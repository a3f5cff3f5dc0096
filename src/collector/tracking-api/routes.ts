import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ForbiddenError, UnauthorizedError } from '../../errors.js';
import type { RateLimiter } from '../../rate-limit.js';
import { countIntake } from '../../telemetry/prometheus.js';
import { parseBody } from '../batch-intake.js';
import { addCorsHeaders } from '../cors.js';
import { acceptedAs, scopeFor } from '../event-sink.js';
import type { CollectorRuntime } from '../runtime.js';
import { checkPageOrigin, workspaceBudget, writeKeyScope } from '../write-keys.js';
import {
  checkTrackingBatchBody,
  checkTrackingMessage,
  type TrackingRequest,
  type WorkspaceScope,
  writeKeyIn,
} from './intake.js';
import { TRACKING_CALLS } from './spec.js';

/** The collector's limiters these endpoints share with `/v1/server/events` and `/v1/events`. */
export interface TrackingApiLimiters {
  /** Requests per second of each collector token. */
  perToken: RateLimiter;
  /** Requests per second of each workspace's browser write keys, as `/v1/events` spends them. */
  perWorkspace: RateLimiter;
  /** Requests per second one address may have refused. */
  refusedPerAddress: RateLimiter;
}

const success = z.object({ success: z.literal(true) });
const batchAnswer = success.extend({
  accepted: z.number(),
  rejected: z.array(z.object({ index: z.number(), code: z.string(), message: z.string() })),
});

const HOW_TO_SEND =
  'send a collector token of one workspace (cpc_…) as the Basic auth username with an empty password, or as writeKey in the body; a page sends a browser write key (cpk_…) so';

/**
 * The write key of an Authorization header: Basic auth's username, as Segment's and
 * RudderStack's libraries send it (the password is ignored, as Segment does), or a bearer token,
 * as our own server endpoints take it.
 */
export function writeKeyOfHeader(authorization: string): string {
  const basic = /^Basic\s+(\S+)$/i.exec(authorization)?.[1];
  if (basic !== undefined) {
    const decoded = Buffer.from(basic, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    return colon === -1 ? decoded : decoded.slice(0, colon);
  }
  const bearer = /^Bearer\s+(\S+)$/i.exec(authorization)?.[1];
  if (bearer !== undefined) return bearer;
  throw new UnauthorizedError(
    `the Authorization header is neither Basic nor Bearer: ${HOW_TO_SEND}`,
  );
}

/** Who sends: the scope its messages land in, and whose budget the request spends. */
interface Admission {
  scope: WorkspaceScope;
  budget: { limiter: 'token' | 'workspace'; key: string };
  /** A page's browser write key: its answers carry CORS headers. */
  page: boolean;
}

/**
 * The sender a write key names: a collector token of one workspace (a backend, at server trust),
 * or a browser write key (a page, as RudderStack's browser SDK sends: browser trust, from an
 * origin its workspace allows).
 */
function admissionOf(
  runtime: CollectorRuntime,
  request: FastifyRequest,
  writeKey: string | undefined,
): Admission {
  if (writeKey === undefined || writeKey === '') {
    throw new UnauthorizedError(`missing write key: ${HOW_TO_SEND}`);
  }
  const principal = runtime.registry.authenticateCollector(writeKey);
  if (!principal) {
    const browserKey = runtime.registry.authenticateWriteKey(writeKey);
    if (browserKey) {
      checkPageOrigin(runtime, request, browserKey);
      return {
        scope: writeKeyScope(browserKey),
        budget: {
          limiter: 'workspace',
          key: workspaceBudget(browserKey.tenantId, browserKey.workspaceId),
        },
        page: true,
      };
    }
    if (/^cp[tw]_/.test(writeKey)) {
      throw new ForbiddenError(
        'a write key is a collector token (cpc_…) or a browser write key (cpk_…), not an API token',
      );
    }
    throw new UnauthorizedError('unknown or revoked write key');
  }
  const { tenantId, workspaceId, tokenId } = principal;
  if (workspaceId === null) {
    throw new ForbiddenError(
      'this collector token is tenant-wide; a write key must be a collector token minted for one workspace (POST /v1/tenants/{tenant}/tokens with kind "collector" and a workspace_id)',
    );
  }
  return {
    scope: { source: 'server', intake: 'segment_api', tenantId, workspaceId },
    budget: { limiter: 'token', key: tokenId },
    page: false,
  };
}

/**
 * Segment's tracking API (docs/decisions.md "Segment-spec tracking API"): `POST /v1/batch` and
 * one endpoint per message type, so Segment's and RudderStack's server libraries send to cds
 * unchanged. Each message becomes an envelope of the write key's workspace, checked and landed
 * as a server event; a request is answered once its accepted lines are durable in its sink.
 */
export async function trackingApiRoutes(
  app: FastifyInstance,
  runtime: CollectorRuntime,
  limiters: TrackingApiLimiters,
): Promise<void> {
  const { perToken, perWorkspace, refusedPerAddress } = limiters;
  const scopes = new WeakMap<FastifyRequest, WorkspaceScope>();

  /**
   * Counts the request against its token or its workspace's pages, or against its address when
   * it is refused; a page's request is answered with CORS headers from then on.
   */
  const admit = (
    request: FastifyRequest,
    reply: FastifyReply,
    writeKey: () => string | undefined,
  ): WorkspaceScope => {
    let admitted: Admission;
    try {
      admitted = admissionOf(runtime, request, writeKey());
    } catch (error) {
      refusedPerAddress.take(request.ip);
      throw error;
    }
    if (admitted.page) addCorsHeaders(request, reply);
    (admitted.budget.limiter === 'workspace' ? perWorkspace : perToken).take(admitted.budget.key);
    return admitted.scope;
  };

  /**
   * A key in the Authorization header is checked before the body is read, so a refused request
   * costs no parsing; a request without one must be parsed to find `writeKey`, unless its address
   * has used up its refusals.
   */
  const admitByHeader = async (request: FastifyRequest, reply: FastifyReply) => {
    const authorization = request.headers.authorization;
    if (authorization === undefined || authorization === '') {
      refusedPerAddress.check(request.ip);
      return;
    }
    scopes.set(
      request,
      admit(request, reply, () => writeKeyOfHeader(authorization)),
    );
  };

  /** The request's scope, admitting it by the body's `writeKey` where no header named a key. */
  const admitted = (
    request: FastifyRequest,
    reply: FastifyReply,
    text: string,
  ): { scope: WorkspaceScope; body?: unknown } => {
    const scope = scopes.get(request);
    if (scope) return { scope };
    let body: unknown;
    try {
      body = parseBody(text);
    } catch (error) {
      refusedPerAddress.take(request.ip);
      throw error;
    }
    return { scope: admit(request, reply, () => writeKeyIn(body)), body };
  };

  const requestIn = (scope: WorkspaceScope): TrackingRequest => ({
    scope: scopeFor(runtime.sink, scope),
    receivedAt: runtime.clock.now().toISOString(),
    collectorId: runtime.sink.collectorId,
    form: runtime.sink.form,
  });

  await app.register(async (trackingApi) => {
    // Segment's API reads every body as JSON, whatever its content-type says (RudderStack's
    // library sends its gzipped batches with none); bodies stay text until parsed below, on a
    // worker thread when a batch is large.
    trackingApi.removeAllContentTypeParsers();
    trackingApi.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) =>
      done(null, body),
    );
    const routes = trackingApi.withTypeProvider<ZodTypeProvider>();
    const textBody = z.string().nullish();

    routes.post(
      '/v1/batch',
      { onRequest: admitByHeader, schema: { body: textBody, response: { 200: batchAnswer } } },
      async (request, reply) => {
        const text = request.body ?? '';
        const { scope, body } = admitted(request, reply, text);
        const outcome =
          body === undefined
            ? await runtime.intakePool.checkTrackingBatch(
                { ...requestIn(scope), body: text },
                runtime.registry,
              )
            : checkTrackingBatchBody(body, requestIn(scope), runtime.registry);
        await runtime.sink.append(outcome.events);
        countIntake(outcome.accepted, outcome.rejected);
        return { success: true as const, accepted: outcome.accepted, rejected: outcome.rejected };
      },
    );

    for (const type of TRACKING_CALLS) {
      routes.post(
        `/v1/${type}`,
        { onRequest: admitByHeader, schema: { body: textBody, response: { 200: success } } },
        async (request, reply) => {
          const text = request.body ?? '';
          const admission = admitted(request, reply, text);
          const body = 'body' in admission ? admission.body : parseBody(text);
          const lines = checkTrackingMessage(
            body,
            type,
            requestIn(admission.scope),
            runtime.registry,
          );
          await runtime.sink.append(acceptedAs(runtime.sink.form, lines));
          countIntake(lines.length, []);
          return { success: true as const };
        },
      );
    }
  });
}
