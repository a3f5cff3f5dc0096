import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';

export function healthRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get(
    '/healthz',
    { schema: { response: { 200: z.object({ status: z.literal('ok') }) } } },
    async () => ({
      status: 'ok' as const,
    }),
  );
  api.get(
    '/readyz',
    {
      schema: { response: { 200: z.object({ status: z.literal('ready'), database: z.string() }) } },
    },
    async () => {
      await context.store.read((session) => session.allText('SELECT 1'));
      return { status: 'ready' as const, database: context.store.path };
    },
  );
}
