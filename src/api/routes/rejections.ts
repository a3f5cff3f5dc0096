import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { ValidationError } from '../../errors.js';
import { idSchema } from '../../ids.js';
import { listRejections } from '../../ingest/rejections.js';
import { requestedWorkspace } from '../auth.js';
import { pagingQuery, tenantParams } from '../schemas.js';

const rejectionResponse = z.object({
  event_id: z.string().nullable(),
  event_name: z.string().nullable(),
  workspace_id: z.string(),
  reason: z.string(),
  received_at: z.string().nullable(),
  rejected_at: z.string(),
});

/** The lines ingest refused in a workspace (design §9 `rejected_events`), newest first. */
export function rejectionRoutes(app: FastifyInstance, context: Context): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/tenants/:tenant/rejections',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery.extend({ workspace_id: idSchema.optional() }),
        response: {
          200: z.object({
            rejections: z.array(rejectionResponse),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const workspaceId = requestedWorkspace(request);
      if (workspaceId === undefined) throw ValidationError.field('workspace_id', 'is required');
      const page = await listRejections(
        context,
        { tenantId: request.params.tenant, workspaceId },
        { limit: request.query.limit, cursor: request.query.cursor ?? null },
      );
      return { rejections: page.items, next_cursor: page.next_cursor };
    },
  );
}
