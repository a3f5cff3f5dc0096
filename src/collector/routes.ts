import cors from '@fastify/cors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  BadRequestError,
  ForbiddenError,
  NotFoundError,
  OriginNotAllowedError,
  UnauthorizedError,
  ValidationError,
} from '../errors.js';
import { BODY_LIMIT_BYTES } from '../http/body-limit.js';
import { errorCodeOf } from '../http/error-codes.js';
import type { EventSource } from '../landing-format.js';
import { RateLimiter } from '../rate-limit.js';
import { countIntake, countRefusedRequest } from '../telemetry/prometheus.js';
import { faultError, type IntakeScope, intake } from './accept.js';
import { analyticsJsRoutes } from './analytics-js/routes.js';
import { inflatedBody } from './compressed-body.js';
import { addCorsHeaders, preflightOptions } from './cors.js';
import { acceptedAs, scopeFor } from './event-sink.js';
import { originAllowedAnywhere, originAllowedFor } from './origins.js';
import type { CollectorPrincipal } from './registry.js';
import type { CollectorRuntime } from './runtime.js';
import { sdkScriptRoute } from './sdk-script.js';
import { trackingApiRoutes } from './tracking-api/routes.js';
import { workspaceBudget } from './write-keys.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Where an admitted collector request may put events (set by its admission hook). */
    collectorScope: IntakeScope | null;
  }
}

const accepted = z.object({ accepted: z.number() });
const batchAnswer = z.object({
  accepted: z.number(),
  rejected: z.array(z.object({ index: z.number(), code: z.string(), message: z.string() })),
});

function header(request: FastifyRequest, name: string): string | undefined {
  const value = request.headers[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/**
 * Where a browser request names its tenant or workspace: a header, or a query parameter, as a
 * beacon does (it can set no header). A value given both ways must be the same.
 */
function browserTarget(
  request: FastifyRequest,
  headerName: string,
  queryName: string,
): string | undefined {
  const fromHeader = header(request, headerName);
  const query = request.query as Record<string, unknown> | undefined;
  const fromQuery = query?.[queryName];
  if (fromQuery !== undefined && typeof fromQuery !== 'string') {
    throw ValidationError.field(`query.${queryName}`, 'is given more than once');
  }
  if (fromHeader !== undefined && fromQuery !== undefined && fromQuery !== fromHeader) {
    throw ValidationError.field(`query.${queryName}`, `differs from the ${headerName} header`);
  }
  return fromHeader ?? (fromQuery === '' ? undefined : fromQuery);
}

const tenantOf = (request: FastifyRequest) => browserTarget(request, 'x-tenant-id', 'tenant_id');
const workspaceOf = (request: FastifyRequest) =>
  browserTarget(request, 'x-workspace-id', 'workspace_id');

/**
 * The origin check of every browser request and preflight (issue 19): a request from a page
 * (it carries `Origin`) is refused 403 unless its workspace allows that origin. A request naming
 * no existing workspace is left to admission, which answers why.
 */
function checkOrigin(runtime: CollectorRuntime, request: FastifyRequest): void {
  const origin = header(request, 'origin');
  if (origin === undefined) return;
  const tenantId = tenantOf(request);
  const workspaceId = workspaceOf(request);
  const named =
    tenantId !== undefined &&
    workspaceId !== undefined &&
    runtime.registry.hasWorkspace(tenantId, workspaceId);
  if (named) {
    if (!originAllowedFor(runtime, origin, tenantId, workspaceId)) {
      throw new OriginNotAllowedError(origin);
    }
    return;
  }
  if (request.method === 'OPTIONS' && !originAllowedAnywhere(runtime, origin)) {
    throw new OriginNotAllowedError(origin);
  }
}

/** Browser requests name their tenant and workspace (headers or query), which must exist. */
function browserScope(runtime: CollectorRuntime, request: FastifyRequest): IntakeScope {
  const tenantId = tenantOf(request);
  const workspaceId = workspaceOf(request);
  if (!tenantId)
    throw ValidationError.field('headers.x-tenant-id', 'is required (or query tenant_id)');
  if (!workspaceId) {
    throw ValidationError.field('headers.x-workspace-id', 'is required (or query workspace_id)');
  }
  if (!runtime.registry.hasWorkspace(tenantId, workspaceId)) {
    throw new NotFoundError(`no workspace ${workspaceId} in tenant ${tenantId}`);
  }
  return { source: 'browser', tenantId, workspaceId };
}

/** Server requests carry a collector token (design §7); the token is what they are counted by. */
function serverPrincipal(runtime: CollectorRuntime, request: FastifyRequest): CollectorPrincipal {
  const token = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
  if (!token) throw new UnauthorizedError('missing bearer token (a collector token, cpc_…)');
  const principal = runtime.registry.authenticateCollector(token);
  if (!principal) {
    if (/^cp[tw]_/.test(token))
      throw new ForbiddenError('server events take a collector token (cpc_…)');
    throw new UnauthorizedError('unknown or revoked collector token');
  }
  return principal;
}

interface Admission {
  scope: IntakeScope;
  /** What the request is counted by: its (tenant, workspace) pair, or its token. */
  budgetKey: string;
}

function admission(
  runtime: CollectorRuntime,
  source: EventSource,
  request: FastifyRequest,
): Admission {
  if (source === 'browser') {
    const scope = browserScope(runtime, request);
    return { scope, budgetKey: workspaceBudget(scope.tenantId, scope.workspaceId ?? '') };
  }
  const principal = serverPrincipal(runtime, request);
  return {
    scope: { source, tenantId: principal.tenantId, workspaceId: principal.workspaceId },
    budgetKey: principal.tokenId,
  };
}

/**
 * The collector's four endpoints (interface "Event collection", design §7–§8). A request is
 * answered only once its accepted lines are durable in its sink: a landing file, or the events
 * stream in cluster mode.
 */
export async function collectorRoutes(
  app: FastifyInstance,
  runtime: CollectorRuntime,
): Promise<void> {
  // Budgets are keyed on what the registry vouches for, never on a header as sent: a browser
  // request spends its (tenant, workspace) pair's, a server request its token's. One the registry
  // refuses spends its address's budget for refusals and nothing of any tenant's.
  const perWorkspace = new RateLimiter(runtime.rateLimitPerSecond, runtime.clock);
  const perToken = new RateLimiter(runtime.rateLimitPerSecond, runtime.clock);
  const refusedPerAddress = new RateLimiter(runtime.refusedRateLimitPerSecond, runtime.clock);
  // A property of the request, set by admission: a WeakMap entry per request cost more.
  app.decorateRequest('collectorScope', null);
  // Callback hooks, not async ones, on this path: each async hook is a promise and a turn of the
  // microtask queue per request.
  app.addHook('onResponse', (_request, reply, done) => {
    if (reply.statusCode >= 400) {
      countRefusedRequest(errorCodeOf(reply) ?? String(reply.statusCode));
    }
    done();
  });

  // Every collector endpoint takes gzip and deflate bodies; limits hold for the inflated bytes.
  // `routeOptions` builds a new object each time it is read: not read for a body sent as is.
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const coding = request.headers['content-encoding'];
    if (coding === undefined) {
      done(null, payload);
      return;
    }
    done(null, inflatedBody(coding, payload, request.routeOptions.bodyLimit ?? BODY_LIMIT_BYTES));
  });

  /** Runs before the body is read, so a refused request costs no parsing. */
  const admit =
    (source: EventSource) => (request: FastifyRequest, _reply: unknown, done: () => void) => {
      let admitted: Admission;
      try {
        admitted = admission(runtime, source, request);
      } catch (error) {
        refusedPerAddress.take(request.ip);
        throw error;
      }
      (source === 'browser' ? perWorkspace : perToken).take(admitted.budgetKey);
      request.collectorScope = admitted.scope;
      done();
    };
  const scopeOf = (request: FastifyRequest): IntakeScope => {
    const scope = request.collectorScope;
    if (!scope) throw new Error('a collector route ran without its admission hook');
    return scope;
  };

  const receiveOne = async (scope: IntakeScope, event: unknown) => {
    const { lines, faults } = intake(
      runtime.registry,
      [event],
      scopeFor(runtime.sink, scope),
      runtime.clock.now().toISOString(),
      runtime.sink.collectorId,
    );
    const [fault] = faults;
    countIntake(lines.length, faults);
    if (fault) throw faultError(fault, scope.source);
    await runtime.sink.append(acceptedAs(runtime.sink.form, lines));
    return { accepted: lines.length };
  };

  const receiveBatch = async (scope: IntakeScope, body: string) => {
    const request = {
      body,
      scope: scopeFor(runtime.sink, scope),
      receivedAt: runtime.clock.now().toISOString(),
      collectorId: runtime.sink.collectorId,
      form: runtime.sink.form,
    };
    const outcome = await runtime.intakePool.check(request, runtime.registry);
    await runtime.sink.append(outcome.events);
    countIntake(outcome.accepted, outcome.rejected);
    return { accepted: outcome.accepted, rejected: outcome.rejected };
  };

  const routesFor = async (api: FastifyInstance, prefix: string, source: EventSource) => {
    api.withTypeProvider<ZodTypeProvider>().post(
      prefix,
      {
        onRequest: admit(source),
        schema: { body: z.unknown(), response: { 202: accepted } },
      },
      async (request, reply) =>
        reply.code(202).send(await receiveOne(scopeOf(request), request.body)),
    );
    // A batch body stays text until the intake pool parses it, on a worker thread when it is large.
    await api.register(async (batch) => {
      for (const type of ['application/json', 'text/plain']) {
        if (batch.hasContentTypeParser(type)) batch.removeContentTypeParser(type);
      }
      batch.addContentTypeParser(
        ['application/json', ...(source === 'browser' ? ['text/plain'] : [])],
        { parseAs: 'string' },
        (_request, body, done) => done(null, body),
      );
      batch.withTypeProvider<ZodTypeProvider>().post(
        `${prefix}/batch`,
        {
          onRequest: admit(source),
          schema: { body: z.string(), response: { 202: batchAnswer } },
        },
        async (request, reply) =>
          reply.code(202).send(await receiveBatch(scopeOf(request), request.body)),
      );
    });
  };

  // Browser endpoints answer CORS for the origins their workspace allows. A preflight carries no
  // tenant header value, so one for a request naming its workspace in headers passes for an origin
  // any workspace allows; the request itself is checked against its own workspace.
  await app.register(async (browser) => {
    // The CORS plugin answers an OPTIONS that is no preflight in plain text of its own; it is
    // refused here first, in the one error body (design §6).
    browser.addHook('onRequest', (request, _reply, done) => {
      if (
        request.method === 'OPTIONS' &&
        (!header(request, 'origin') || !header(request, 'access-control-request-method'))
      ) {
        throw new BadRequestError(
          'a CORS preflight names its Origin and Access-Control-Request-Method',
        );
      }
      checkOrigin(runtime, request);
      done();
    });
    // The plugin answers preflights, in a scope of their own: the requests themselves get their
    // few headers from `addCorsHeaders`, at a fraction of the plugin's cost per request.
    await browser.register(async (preflights) => {
      await preflights.register(cors, preflightOptions);
    });
    await browser.register(async (requests) => {
      requests.addHook('onRequest', (request, reply, done) => {
        addCorsHeaders(request, reply);
        done();
      });
      // A beacon or a CORS simple request sends its JSON as text/plain (issue 19).
      requests.addContentTypeParser(
        'text/plain',
        { parseAs: 'string' },
        requests.getDefaultJsonParser('error', 'error'),
      );
      await routesFor(requests, '/v1/events', 'browser');
    });
  });
  await routesFor(app, '/v1/server/events', 'server');
  sdkScriptRoute(app);
  await trackingApiRoutes(app, runtime, { perToken, perWorkspace, refusedPerAddress });
  await analyticsJsRoutes(app, runtime, { perWorkspace, refusedPerAddress });
}
