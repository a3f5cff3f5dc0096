import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { eventCountSchema, eventCounts } from '../../catalog/event-counts.js';
import {
  deleteEventType,
  eventTypeDependents,
  eventTypeSchema,
  listEventTypes,
  putEventType,
} from '../../catalog/event-types.js';
import type { Context } from '../../context.js';
import { idSchema, propertyPathSchema } from '../../ids.js';
import { requestedWorkspace } from '../auth.js';
import {
  dryRunQuery,
  eventTypeParams,
  noContent,
  optionalBody,
  pagingQuery,
  tenantParams,
} from '../schemas.js';

const registerBody = optionalBody(
  z
    .object({
      dedup_entity: z.string().min(1).max(128).nullish(),
      dedup_key_paths: z.array(propertyPathSchema).min(1).max(8).nullish(),
    })
    .superRefine((body, ctx) => {
      const hasEntity = body.dedup_entity != null;
      const hasPaths = body.dedup_key_paths != null;
      if (hasEntity !== hasPaths) {
        ctx.addIssue({
          code: 'custom',
          path: [hasEntity ? 'dedup_key_paths' : 'dedup_entity'],
          message: 'dedup_entity and dedup_key_paths are given together or both omitted',
        });
      }
    }),
);

export function eventTypeRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.put(
    '/v1/tenants/:tenant/event-types/:event_name',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: eventTypeParams,
        body: registerBody,
        response: { 200: eventTypeSchema, 201: eventTypeSchema },
      },
    },
    async (request, reply) => {
      const { dedup_entity, dedup_key_paths } = request.body;
      const dedup =
        dedup_entity != null && dedup_key_paths != null
          ? { dedupEntity: dedup_entity, dedupKeyPaths: dedup_key_paths }
          : null;
      const result = await putEventType(
        context,
        request.params.tenant,
        request.params.event_name,
        dedup,
      );
      return reply.code(result.created ? 201 : 200).send(result.eventType);
    },
  );
  api.get(
    '/v1/tenants/:tenant/event-types',
    {
      config: { access: 'tenant-member' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery,
        response: {
          200: z.object({
            event_types: z.array(eventTypeSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listEventTypes(context, request.params.tenant, {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { event_types: page.items, next_cursor: page.next_cursor };
    },
  );
  api.get(
    '/v1/tenants/:tenant/event-type-counts',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: tenantParams,
        querystring: z.object({ workspace_id: idSchema.optional() }),
        response: { 200: z.object({ counts: z.array(eventCountSchema) }) },
      },
    },
    async (request) => ({
      counts: await eventCounts(
        context,
        request.params.tenant,
        requestedWorkspace(request) ?? null,
      ),
    }),
  );
  api.delete(
    '/v1/tenants/:tenant/event-types/:event_name',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: eventTypeParams,
        querystring: dryRunQuery,
        response: {
          200: z.object({
            dry_run: z.literal(true),
            metric_definitions: z.array(
              z.object({ metric_name: z.string(), workspace_id: z.string() }),
            ),
          }),
          204: noContent,
        },
      },
    },
    async (request, reply) => {
      const { tenant, event_name } = request.params;
      if (request.query.dry_run) {
        return {
          dry_run: true as const,
          metric_definitions: await eventTypeDependents(context, tenant, event_name),
        };
      }
      await deleteEventType(context, tenant, event_name);
      return reply.code(204).send(null);
    },
  );
}
