import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { ValidationError } from '../../errors.js';
import {
  historyEntrySchema,
  profileViewSchema,
  summaryRowSchema,
} from '../../identity/profile-schemas.js';
import {
  lookupProfile,
  profileHistory,
  profileSummary,
  viewProfile,
} from '../../identity/profile-view.js';
import { idSchema } from '../../ids.js';
import { metricNameSchema } from '../../metrics/definition-schema.js';
import { requireNumberMetric } from '../../metrics/shapes.js';
import {
  ERASURE_LIMIT_WINDOW_MS,
  ERASURES_PER_MINUTE,
  erasedCountsSchema,
  eraseProfile,
} from '../../privacy/erase.js';
import { RateLimiter } from '../../rate-limit.js';
import { dryRunQuery, pagingQuery, workspaceParams } from '../schemas.js';

const profileParams = workspaceParams.extend({
  profile_id: z.string().regex(/^p_[0-9a-f]{24}$/, 'is not a profile id'),
});

const lookupQuery = z.object({
  email: z.string().min(1).optional(),
  phone: z.string().min(1).optional(),
});

export function profileRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const base = '/v1/tenants/:tenant/workspaces/:workspace/profiles';
  // Keyed by the route's tenant, after the token check.
  const erasureLimit = new RateLimiter(ERASURES_PER_MINUTE, context.clock, ERASURE_LIMIT_WINDOW_MS);
  const scopeOf = (params: { tenant: string; workspace: string }) => ({
    tenantId: params.tenant,
    workspaceId: params.workspace,
  });

  api.get(
    `${base}/lookup`,
    {
      config: { access: 'workspace-member' },
      schema: {
        params: workspaceParams,
        querystring: lookupQuery,
        response: { 200: z.object({ profile_id: z.string() }) },
      },
    },
    async (request) => {
      const { email, phone } = request.query;
      if ((email === undefined) === (phone === undefined)) {
        throw ValidationError.field('email', 'give exactly one of email or phone');
      }
      const identifier =
        email !== undefined
          ? { type: 'email' as const, value: email }
          : { type: 'phone' as const, value: phone as string };
      return lookupProfile(context, scopeOf(request.params), identifier);
    },
  );

  api.get(
    `${base}/summary`,
    {
      config: { access: 'workspace-member' },
      schema: {
        params: workspaceParams,
        querystring: pagingQuery.extend({
          segment_id: idSchema.optional(),
          sort_by: metricNameSchema.optional(),
          order: z.enum(['asc', 'desc']).default('desc'),
        }),
        response: {
          200: z.object({
            profiles: z.array(summaryRowSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      if (request.query.sort_by !== undefined)
        await requireNumberMetric(
          context,
          scopeOf(request.params),
          request.query.sort_by,
          'sort_by',
        );
      const page = await profileSummary(context, scopeOf(request.params), {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
        segmentId: request.query.segment_id ?? null,
        order:
          request.query.sort_by === undefined
            ? null
            : { metric: request.query.sort_by, descending: request.query.order === 'desc' },
      });
      return { profiles: page.items, next_cursor: page.next_cursor };
    },
  );

  api.get(
    `${base}/:profile_id`,
    {
      config: { access: 'workspace-member' },
      schema: { params: profileParams, response: { 200: profileViewSchema } },
    },
    async (request) => viewProfile(context, scopeOf(request.params), request.params.profile_id),
  );

  api.delete(
    `${base}/:profile_id`,
    {
      config: { access: 'tenant-token' },
      schema: {
        params: profileParams,
        querystring: dryRunQuery,
        response: {
          200: z.object({
            profile_id: z.string(),
            dry_run: z.boolean(),
            erased: erasedCountsSchema,
          }),
        },
      },
    },
    async (request) => {
      if (!request.query.dry_run) erasureLimit.take(request.params.tenant);
      const result = await eraseProfile(context, {
        tenantId: request.params.tenant,
        workspaceId: request.params.workspace,
        profileId: request.params.profile_id,
        actor: request.principal.tokenId,
        dryRun: request.query.dry_run,
      });
      return { ...result, dry_run: request.query.dry_run };
    },
  );

  api.get(
    `${base}/:profile_id/history`,
    {
      config: { access: 'workspace-member' },
      schema: {
        params: profileParams,
        querystring: pagingQuery,
        response: {
          200: z.object({
            entries: z.array(historyEntrySchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await profileHistory(
        context,
        scopeOf(request.params),
        request.params.profile_id,
        {
          limit: request.query.limit,
          cursor: request.query.cursor ?? null,
        },
      );
      return { entries: page.items, next_cursor: page.next_cursor };
    },
  );
}
