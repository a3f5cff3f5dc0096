import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { summaryRowSchema } from '../../identity/profile-schemas.js';
import { idSchema } from '../../ids.js';
import { consentCategorySchema, MAX_CONSENT_CATEGORIES } from '../../privacy/consent.js';
import {
  createSegment,
  DEFAULT_AUTOMATIONS,
  deleteSegment,
  getSegment,
  listSegments,
  SEGMENT_STATUSES,
  segmentListItemSchema,
  segmentSchema,
  setSegmentStatus,
} from '../../segments/definitions.js';
import { memberCountsSchema, segmentMemberCounts } from '../../segments/member-counts.js';
import { segmentMembers } from '../../segments/members.js';
import {
  PREVIEW_SAMPLE_LIMIT,
  previewResultSchema,
  previewSegment,
} from '../../segments/preview.js';
import { ruleMetricSchema, ruleMetrics } from '../../segments/rule-metrics.js';
import {
  retriedWebhookSchema,
  retryTenantWebhooks,
  tenantWebhookPage,
  WEBHOOK_STATUSES,
  webhookPageSchema,
} from '../../webhooks/outbox.js';
import { requestedWorkspace, requiredWorkspace } from '../auth.js';
import { noContent, pagingQuery, segmentParams, tenantParams } from '../schemas.js';

const predicateSchema = z.record(z.string(), z.unknown(), { error: 'must be an object' });

const createBody = z.object({
  workspace_id: idSchema,
  display_name: z.string().min(1).max(200),
  predicate: predicateSchema,
  status: z.enum(SEGMENT_STATUSES).default('active'),
  automations: z
    .object({
      on_enter: z.boolean().default(DEFAULT_AUTOMATIONS.on_enter),
      on_exit: z.boolean().default(DEFAULT_AUTOMATIONS.on_exit),
      on_backfill: z.boolean().default(DEFAULT_AUTOMATIONS.on_backfill),
    })
    .default(DEFAULT_AUTOMATIONS),
  /** Consent categories each of the segment's webhooks needs of its profile ("Consent"). */
  required_consent: z.array(consentCategorySchema).max(MAX_CONSENT_CATEGORIES).default([]),
});

const workspaceQuery = z.object({ workspace_id: idSchema.optional() });

export function segmentRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.post(
    '/v1/tenants/:tenant/segments/preview',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        body: z.object({
          workspace_id: idSchema,
          predicate: predicateSchema,
          sample_size: z.number().int().min(0).max(PREVIEW_SAMPLE_LIMIT).default(0),
        }),
        response: { 200: previewResultSchema },
      },
    },
    async (request) =>
      previewSegment(
        context,
        request.params.tenant,
        request.body.workspace_id,
        request.body.predicate,
        request.body.sample_size,
      ),
  );
  api.put(
    '/v1/tenants/:tenant/segments/:segment_id',
    {
      config: { access: 'tenant-token' },
      schema: { params: segmentParams, body: createBody, response: { 201: segmentSchema } },
    },
    async (request, reply) => {
      const { workspace_id, ...input } = request.body;
      const key = {
        tenantId: request.params.tenant,
        workspaceId: workspace_id,
        segmentId: request.params.segment_id,
      };
      return reply.code(201).send(await createSegment(context, key, input));
    },
  );
  api.get(
    '/v1/tenants/:tenant/segments',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery.extend(workspaceQuery.shape),
        response: {
          200: z.object({
            segments: z.array(segmentListItemSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listSegments(context, request.params.tenant, {
        workspaceId: requestedWorkspace(request) ?? null,
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { segments: page.items, next_cursor: page.next_cursor };
    },
  );
  api.get(
    '/v1/tenants/:tenant/segment-metrics',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: tenantParams,
        querystring: workspaceQuery,
        response: { 200: z.object({ metrics: z.array(ruleMetricSchema) }) },
      },
    },
    async (request) => ({
      metrics: await ruleMetrics(context, request.params.tenant, requiredWorkspace(request)),
    }),
  );
  api.get(
    '/v1/tenants/:tenant/segments/:segment_id/definition',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: segmentParams,
        querystring: workspaceQuery,
        response: { 200: segmentSchema },
      },
    },
    async (request) =>
      getSegment(context, {
        tenantId: request.params.tenant,
        workspaceId: requiredWorkspace(request),
        segmentId: request.params.segment_id,
      }),
  );
  api.get(
    '/v1/tenants/:tenant/segments/:segment_id/members',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: segmentParams,
        querystring: pagingQuery.extend(workspaceQuery.shape),
        response: {
          200: z.object({
            members: z.array(summaryRowSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await segmentMembers(
        context,
        {
          tenantId: request.params.tenant,
          workspaceId: requiredWorkspace(request),
          segmentId: request.params.segment_id,
        },
        { limit: request.query.limit, cursor: request.query.cursor ?? null },
      );
      return { members: page.items, next_cursor: page.next_cursor };
    },
  );
  api.get(
    '/v1/tenants/:tenant/segments/:segment_id/member-counts',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: segmentParams,
        querystring: workspaceQuery,
        response: { 200: memberCountsSchema },
      },
    },
    async (request) =>
      segmentMemberCounts(context, {
        tenantId: request.params.tenant,
        workspaceId: requiredWorkspace(request),
        segmentId: request.params.segment_id,
      }),
  );
  api.get(
    '/v1/tenants/:tenant/segments/:segment_id/webhooks',
    {
      config: { access: 'workspace-member' },
      schema: {
        params: segmentParams,
        querystring: pagingQuery.extend(workspaceQuery.shape).extend({
          status: z.enum(WEBHOOK_STATUSES).optional(),
        }),
        response: { 200: webhookPageSchema },
      },
    },
    async (request) => {
      const key = {
        tenantId: request.params.tenant,
        workspaceId: requiredWorkspace(request),
        segmentId: request.params.segment_id,
      };
      await getSegment(context, key);
      return tenantWebhookPage(context, key, request.query);
    },
  );
  api.post(
    '/v1/tenants/:tenant/segments/:segment_id/webhooks/retry',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: segmentParams,
        body: z.object({
          workspace_id: idSchema,
          webhook_id: retriedWebhookSchema,
        }),
        response: { 200: z.object({ requeued: z.number() }) },
      },
    },
    async (request) => {
      const key = {
        tenantId: request.params.tenant,
        workspaceId: request.body.workspace_id,
        segmentId: request.params.segment_id,
      };
      await getSegment(context, key);
      return {
        requeued: await retryTenantWebhooks(context, key, request.body.webhook_id ?? null),
      };
    },
  );
  api.put(
    '/v1/tenants/:tenant/segments/:segment_id/status',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: segmentParams,
        body: z.object({ workspace_id: idSchema, status: z.enum(SEGMENT_STATUSES) }),
        response: { 200: segmentSchema },
      },
    },
    async (request) =>
      setSegmentStatus(
        context,
        {
          tenantId: request.params.tenant,
          workspaceId: request.body.workspace_id,
          segmentId: request.params.segment_id,
        },
        request.body.status,
      ),
  );
  api.delete(
    '/v1/tenants/:tenant/segments/:segment_id',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: segmentParams,
        querystring: z.object({ workspace_id: idSchema }),
        response: { 204: noContent },
      },
    },
    async (request, reply) => {
      await deleteSegment(context, {
        tenantId: request.params.tenant,
        workspaceId: request.query.workspace_id,
        segmentId: request.params.segment_id,
      });
      return reply.code(204).send(null);
    },
  );
}
