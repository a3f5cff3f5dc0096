import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { idSchema } from '../../ids.js';
import { requireWorkspace } from '../../tenancy/workspaces.js';
import {
  retriedWebhookSchema,
  retryTenantWebhooks,
  tenantWebhookPage,
  WEBHOOK_STATUSES,
  webhookPageSchema,
  webhookTotals,
  webhookTotalsSchema,
} from '../../webhooks/outbox.js';
import { requiredWorkspace } from '../auth.js';
import { pagingQuery, tenantParams } from '../schemas.js';

/** An unknown workspace is 404, as on every workspace read, not an empty list. */
function requireWorkspaceOf(
  context: Context,
  scope: { tenantId: string; workspaceId: string },
): Promise<unknown> {
  return context.store.read((session) =>
    requireWorkspace(session, scope.tenantId, scope.workspaceId),
  );
}

/**
 * A tenant's webhook deliveries across its segments (the console's Webhooks page): listed, counted
 * by status, and retried. The operator's outbox (`/v1/operator/webhooks`) spans every tenant.
 */
export function tenantWebhookRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get(
    '/v1/tenants/:tenant/webhooks',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery.extend({
          workspace_id: idSchema.optional(),
          segment_id: idSchema.optional(),
          status: z.enum(WEBHOOK_STATUSES).optional(),
        }),
        response: { 200: webhookPageSchema },
      },
    },
    async (request) => {
      const scope = {
        tenantId: request.params.tenant,
        workspaceId: requiredWorkspace(request),
        segmentId: request.query.segment_id ?? null,
      };
      await requireWorkspaceOf(context, scope);
      return tenantWebhookPage(context, scope, request.query);
    },
  );
  api.get(
    '/v1/tenants/:tenant/webhook-totals',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: tenantParams,
        querystring: z.object({ workspace_id: idSchema.optional() }),
        response: { 200: webhookTotalsSchema },
      },
    },
    async (request) => {
      const scope = {
        tenantId: request.params.tenant,
        workspaceId: requiredWorkspace(request),
        segmentId: null,
      };
      await requireWorkspaceOf(context, scope);
      return webhookTotals(context, scope);
    },
  );
  api.post(
    '/v1/tenants/:tenant/webhooks/retry',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        body: z.object({
          workspace_id: idSchema,
          segment_id: idSchema.nullish(),
          webhook_id: retriedWebhookSchema,
        }),
        response: { 200: z.object({ requeued: z.number() }) },
      },
    },
    async (request) => {
      const scope = {
        tenantId: request.params.tenant,
        workspaceId: request.body.workspace_id,
        segmentId: request.body.segment_id ?? null,
      };
      await requireWorkspaceOf(context, scope);
      return {
        requeued: await retryTenantWebhooks(context, scope, request.body.webhook_id ?? null),
      };
    },
  );
}
