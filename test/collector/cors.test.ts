import cors from '@fastify/cors';
import Fastify, { type FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { addCorsHeaders, preflightOptions } from '../../src/collector/cors.js';

async function appWith(setup: (app: FastifyInstance) => Promise<void>): Promise<FastifyInstance> {
  const app = Fastify();
  await setup(app);
  app.post('/v1/events', async (_request, reply) => reply.code(202).send({ accepted: 1 }));
  await app.ready();
  return app;
}

/** The headers of an answer that CORS decides, whoever wrote them. */
function corsHeaders(headers: Record<string, unknown>) {
  return Object.fromEntries(
    Object.entries(headers).filter(
      ([name]) => name === 'vary' || name.startsWith('access-control'),
    ),
  );
}

describe('the CORS headers of browser requests that are no preflight', () => {
  it('are the ones @fastify/cors writes with the preflight options', async () => {
    const plugin = await appWith(async (app) => {
      await app.register(cors, preflightOptions);
    });
    const ours = await appWith(async (app) => {
      app.addHook('onRequest', (request, reply, done) => {
        addCorsHeaders(request, reply);
        done();
      });
    });
    const requests = [{}, { origin: 'https://shop.example' }, { origin: '' }];
    for (const headers of requests) {
      const request = { method: 'POST' as const, url: '/v1/events', headers, payload: {} };
      const expected = await plugin.inject(request);
      const answered = await ours.inject(request);
      expect(corsHeaders(answered.headers), JSON.stringify(headers)).toEqual(
        corsHeaders(expected.headers),
      );
      expect(corsHeaders(answered.headers)).toHaveProperty('vary', 'Origin');
    }
    await plugin.close();
    await ours.close();
  });
});
