import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { eventNameSchema, idSchema } from '../../ids.js';
import {
  definedMetricNameSchema,
  metricDefinitionInputSchema,
  workspaceScopeSchema,
} from '../../metrics/definition-schema.js';
import {
  createMetricDefinition,
  deleteMetricDefinition,
  listMetricDefinitions,
  metricDefinitionSchema,
} from '../../metrics/definitions.js';
import {
  metricDefinitionDependents,
  metricDependentSchema,
} from '../../segments/metric-dependents.js';
import { requestedWorkspace } from '../auth.js';
import { dryRunQuery, noContent, pagingQuery, tenantParams } from '../schemas.js';

export function metricDefinitionRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.put(
    '/v1/tenants/:tenant/metric-definitions',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        body: metricDefinitionInputSchema,
        response: {
          201: z.object({
            tenant_id: z.string(),
            metric_name: z.string(),
            status: z.literal('created'),
          }),
        },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await createMetricDefinition(context, request.params.tenant, request.body)),
  );
  api.get(
    '/v1/tenants/:tenant/metric-definitions',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery.extend({ workspace_id: idSchema.optional() }),
        response: {
          200: z.object({
            metric_definitions: z.array(metricDefinitionSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listMetricDefinitions(
        context,
        request.params.tenant,
        requestedWorkspace(request) ?? null,
        { limit: request.query.limit, cursor: request.query.cursor ?? null },
      );
      return { metric_definitions: page.items, next_cursor: page.next_cursor };
    },
  );
  api.delete(
    '/v1/tenants/:tenant/metric-definitions',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        querystring: dryRunQuery.extend({
          metric_name: definedMetricNameSchema,
          event_name: eventNameSchema,
          workspace_id: workspaceScopeSchema.default('*'),
        }),
        response: {
          200: z.object({ dry_run: z.literal(true), segments: z.array(metricDependentSchema) }),
          204: noContent,
        },
      },
    },
    async (request, reply) => {
      const { metric_name, event_name, workspace_id, dry_run } = request.query;
      const key = { metricName: metric_name, eventName: event_name, workspaceScope: workspace_id };
      if (dry_run) {
        return {
          dry_run: true as const,
          segments: await metricDefinitionDependents(context, request.params.tenant, key),
        };
      }
      await deleteMetricDefinition(context, request.params.tenant, key);
      return reply.code(204).send(null);
    },
  );
}
