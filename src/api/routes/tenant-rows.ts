import { createReadStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { OwnerUnavailableError } from '../../errors.js';
import { idSchema } from '../../ids.js';
import type { RunningOwner } from '../../shards/owner.js';

/**
 * Cluster mode: the route a shard fetches a moving tenant's rows from, one table at a time, as
 * Parquet (src/shards/tenant-moves.ts). Operator only: every owner of a cluster shares the master
 * key, so the one it calls with is its own. Not part of the embedded server's API.
 */
export function tenantRowsRoutes(
  app: FastifyInstance,
  shard: string,
  owner: () => RunningOwner | null,
): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/operator/shards/tenants/:tenant_id/rows/:table',
    {
      config: { access: 'operator' },
      schema: {
        params: z.object({ tenant_id: idSchema, table: z.string().regex(/^[a-z_][a-z0-9_]*$/) }),
      },
    },
    async (request, reply) => {
      const running = owner();
      if (running === null) throw new OwnerUnavailableError(shard, 'it is still starting');
      const path = await running.exportTable(request.params.tenant_id, request.params.table);
      const file = createReadStream(path);
      file.once('close', () => {
        unlink(path).catch(() => undefined);
      });
      return reply.type('application/vnd.apache.parquet').send(file);
    },
  );
}
