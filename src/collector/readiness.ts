import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { BusKeyMissingError, RegistryLoadingError } from '../errors.js';
import type { BusCollectorRuntime } from './runtime.js';

/**
 * `GET /readyz` of `cds collect --bus`: 503 `registry_loading` until the registry bucket's
 * entries are applied, then 503 `bus_unavailable` while no owner has published the bus key, so a
 * load balancer sends no event that would be refused.
 */
export function busReadinessRoute(app: FastifyInstance, collector: BusCollectorRuntime): void {
  app
    .withTypeProvider<ZodTypeProvider>()
    .get(
      '/readyz',
      { schema: { response: { 200: z.object({ status: z.literal('ready') }) } } },
      async () => {
        if (!collector.isReady()) throw new RegistryLoadingError();
        if (!collector.hasBusKey()) throw new BusKeyMissingError();
        return { status: 'ready' as const };
      },
    );
}
