import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { idSchema } from '../../ids.js';
import { listErasures } from '../../privacy/audit.js';
import { erasedCountsResponse, pagingQuery, tenantParams } from '../schemas.js';

const erasureRecordResponse = z.object({
  erasure_id: z.string(),
  workspace_id: z.string(),
  profile_id: z.string(),
  actor: z.string(),
  erased_at: z.string(),
  purged_at: z.string().nullable(),
  erased: erasedCountsResponse,
});

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
            erasures: z.array(erasureRecordResponse),
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
