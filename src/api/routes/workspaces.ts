import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { allowedOriginsSchema } from '../../collector/origins.js';
import type { Context } from '../../context.js';
import { consentCategorySchema, MAX_CONSENT_CATEGORIES } from '../../privacy/consent.js';
import {
  listWorkspaces,
  putWorkspace,
  requireWorkspace,
  workspaceSchema,
} from '../../tenancy/workspaces.js';
import { optionalBody, pagingQuery, tenantParams, workspaceParams } from '../schemas.js';

export function workspaceRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.put(
    '/v1/tenants/:tenant/workspaces/:workspace',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: workspaceParams,
        body: optionalBody(
          z.object({
            display_name: z.string().min(1).max(200).nullish(),
            allowed_origins: allowedOriginsSchema.optional(),
            consent_categories: z
              .array(consentCategorySchema)
              .max(MAX_CONSENT_CATEGORIES)
              .optional(),
            consent_default: z.enum(['allow', 'deny']).optional(),
          }),
        ),
        response: { 200: workspaceSchema, 201: workspaceSchema },
      },
    },
    async (request, reply) => {
      const { tenant, workspace } = request.params;
      const result = await putWorkspace(context, tenant, workspace, {
        displayName: request.body.display_name ?? null,
        allowedOrigins: request.body.allowed_origins ?? null,
        consentCategories: request.body.consent_categories ?? null,
        consentDefault: request.body.consent_default ?? null,
      });
      return reply.code(result.created ? 201 : 200).send(result.workspace);
    },
  );
  api.get(
    '/v1/tenants/:tenant/workspaces',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery,
        response: {
          200: z.object({
            workspaces: z.array(workspaceSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listWorkspaces(context, request.params.tenant, {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { workspaces: page.items, next_cursor: page.next_cursor };
    },
  );
  api.get(
    '/v1/tenants/:tenant/workspaces/:workspace',
    {
      config: { access: 'workspace-member' },
      schema: { params: workspaceParams, response: { 200: workspaceSchema } },
    },
    async (request) =>
      context.store.read((session) =>
        requireWorkspace(session, request.params.tenant, request.params.workspace),
      ),
  );
}
