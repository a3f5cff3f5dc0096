import Fastify, { type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { serializerCompiler, validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { handleError, handleNotFound } from './error-handler.js';

/** The largest body any route takes: a collector batch (design §8). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

/** What every cds HTTP process shares: zod schemas, JSON-only bodies and the one error answer. */
export function createBaseApp(logger: FastifyServerOptions['logger'] = false): FastifyInstance {
  const app = Fastify({ logger, bodyLimit: BODY_LIMIT_BYTES });
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
      async () => ({
        status: 'ok' as const,
      }),
    );
  return app;
}
