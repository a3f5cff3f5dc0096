import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type AppError, ShuttingDownError, ValidationError } from '../errors.js';
import { BODY_LIMIT_BYTES } from '../http/body-limit.js';
import { requirePackage } from '../require-package.js';
import { componentLog } from '../telemetry/log.js';
import { recordRequestDuration } from '../telemetry/prometheus.js';
import { handleError, handleNotFound } from './error-handler.js';
import { FORWARDED_FROM } from './forward.js';
import { answerServerEdges, checkRequestLine, httpEdgeOptions } from './http-edges.js';
import { recordRoutes } from './openapi.js';
import { answerAfterUnreadBody } from './unread-body.js';

const { fastify: Fastify, LogController } = requirePackage<typeof import('fastify')>('fastify');

/**
 * A logged request shows its path, never its query: a profile lookup carries the email or phone
 * there (`…/profiles/lookup?email=…`), and identifiers are never kept in plain text.
 */
function requestLine(request: FastifyRequest) {
  const forwardedFrom = request.headers[FORWARDED_FROM];
  return {
    method: request.method,
    url: request.url.split('?')[0],
    remoteAddress: request.ip,
    remotePort: request.socket?.remotePort,
    // Cluster mode: the shard of the owner that forwarded this request here.
    ...(typeof forwardedFrom === 'string' ? { forwarded_from: forwardedFrom } : {}),
  };
}

/** A logged answer: its status and, in cluster mode, the shard whose owner gave it. */
function answerLine(reply: FastifyReply) {
  const forwardedTo = reply.request.forwardedTo;
  return forwardedTo
    ? { statusCode: reply.statusCode, forwarded_to: forwardedTo }
    : { statusCode: reply.statusCode };
}

/**
 * What every cds HTTP process shares: zod schemas, JSON-only bodies and the one error answer,
 * including for what Node and Fastify answer before a route runs (see http-edges.ts).
 * `/healthz` answers the error `fault` gives, while it gives one (the database is unavailable).
 */
export function createBaseApp(
  logRequests = false,
  fault: () => AppError | null = () => null,
): FastifyInstance {
  const log = componentLog('http').child(
    {},
    { serializers: { req: requestLine, res: answerLine } },
  );
  // Request lines are written at info: below it (CDS_LOG_LEVEL=warn) they would be built, a
  // child logger and a record object per request, and then dropped.
  const requestsLogged = logRequests && log.isLevelEnabled('info');
  // Fastify answers requests that arrive while it closes with a 503 of its own body; ours says
  // the same in the one error body (design §6).
  const app = Fastify({
    // The process's one log; a request is logged when it was asked for, its errors always.
    loggerInstance: log as FastifyBaseLogger,
    logController: new LogController({ disableRequestLogging: !requestsLogged }),
    // A child logger per request costs the collector's single-event endpoint a fifth of its rate;
    // without request logging, records of a request (its errors) go to the component's logger.
    ...(requestsLogged ? {} : { childLoggerFactory: (logger: FastifyBaseLogger) => logger }),
    bodyLimit: BODY_LIMIT_BYTES,
    // Every schema is zod (set below): given here too, the zod compilers keep Fastify from loading
    // the JSON Schema ones it builds by default (ajv, fast-json-stringify: a hundred modules, on
    // every start). Fastify types these factories as ajv's, hence the casts.
    schemaController: {
      compilersFactory: {
        buildValidator: (() => validatorCompiler) as never,
        buildSerializer: (() => serializerCompiler) as never,
      },
    },
    return503OnClosing: false,
    ...httpEdgeOptions,
    // A URL Fastify cannot decode (FST_ERR_BAD_URL) or a parameter over its limit is answered
    // before routing; it goes through the one error handler like every other failure.
    frameworkErrors: handleError,
  });
  recordRoutes(app);
  // Callback hooks, not async ones, where every request passes: no promise and no turn of the
  // microtask queue each.
  app.addHook('onResponse', (request, reply, done) => {
    recordRequestDuration(
      request.method,
      // The route's template (`/v1/tenants/:tenant/…`), never the path a client sent.
      request.routeOptions.url ?? 'unmatched',
      reply.statusCode,
      reply.elapsedTime / 1000,
    );
    done();
  });
  answerServerEdges(app);
  answerAfterUnreadBody(app);
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  // Async on purpose: the request's hooks go on after the parser has read the rest of the bytes
  // at hand, so a body it refuses (a chunk size that is no hex) is answered 400 as such, not
  // with whatever a later hook would say of the headers.
  app.addHook('onRequest', async (request) => {
    if (closing) throw new ShuttingDownError();
    checkRequestLine(request);
  });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  // Every body is JSON; anything else is answered 415 rather than parsed as text.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler(handleError);
  app.setNotFoundHandler(handleNotFound);
  app
    .withTypeProvider<ZodTypeProvider>()
    .get(
      '/healthz',
      { schema: { response: { 200: z.object({ status: z.literal('ok') }) } } },
      async () => {
        const error = fault();
        if (error) throw error;
        return { status: 'ok' as const };
      },
    );
  return app;
}

/**
 * Listens and answers the address. A port another process holds, or one this user may not
 * bind, is said as a fault of the `port` setting, not as Node's stack trace.
 */
export async function listenOn(app: FastifyInstance, port: number, host: string): Promise<string> {
  try {
    return await app.listen({ port, host });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') {
      throw ValidationError.field(
        'port',
        `${port} on ${host} is in use by another process; choose another with --port or CDS_PORT`,
      );
    }
    if (code === 'EACCES') {
      throw ValidationError.field(
        'port',
        `${port} on ${host} may not be bound by this user; choose one above 1023 with --port or CDS_PORT`,
      );
    }
    throw error;
  }
}
