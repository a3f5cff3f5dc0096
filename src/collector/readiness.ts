import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { RegistryLoadingError } from '../errors.js';
import type { BusCollectorRuntime } from './runtime.js';

/**
 * `GET /readyz` of `cds collect --bus`: 503 `registry_loading` until the registry bucket's
 * entries are applied, so a load balancer sends no event that every tenant would refuse.
 */
export function busReadinessRoute(app: FastifyInstance, collector: BusCollectorRuntime): void {
  app
    .withTypeProvider<ZodTypeProvider>()
    .get(
      '/readyz',
      { schema: { response: { 200: z.object({ status: z.literal('ready') }) } } },
      async () => {
        if (!collector.isReady()) throw new RegistryLoadingError();
        return { status: 'ready' as const };
      },
    );
}
