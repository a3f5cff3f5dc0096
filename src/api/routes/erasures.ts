import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { idSchema } from '../../ids.js';
import { erasureRecordSchema, listErasures } from '../../privacy/audit.js';
import { pagingQuery, tenantParams } from '../schemas.js';

/**
 * The erasure audit log (design §15), for a tenant's privacy officer: a tenant token only, as
 * erasing takes one.
 */
export function erasureRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get(
    '/v1/tenants/:tenant/erasures',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery.extend({ workspace_id: idSchema.optional() }),
        response: {
          200: z.object({
            erasures: z.array(erasureRecordSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listErasures(context, request.params.tenant, {
        workspaceId: request.query.workspace_id ?? null,
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { erasures: page.items, next_cursor: page.next_cursor };
    },
  );
}
