import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import {
  identifierTypeSchema,
  listIdentifierTypes,
  putIdentifierType,
  tierSchema,
} from '../../identity/identifier-types.js';
import { getPlaceholders, putPlaceholders } from '../../identity/placeholders.js';
import { pagingQuery, placeholdersResponse, tenantParams } from '../schemas.js';

const identifierTypeName = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,31}$/, 'must be lowercase and match ^[a-z][a-z0-9_]{0,31}$');

export function identityConfigRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.put(
    '/v1/tenants/:tenant/identifier-types/:type',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams.extend({ type: identifierTypeName }),
        body: z.object({
          tier: tierSchema,
          max_per_profile: z.number().int().min(1).max(1000).nullish(),
        }),
        response: { 200: identifierTypeSchema, 201: identifierTypeSchema },
      },
    },
    async (request, reply) => {
      const result = await putIdentifierType(context, request.params.tenant, {
        type: request.params.type,
        tier: request.body.tier,
        maxPerProfile: request.body.max_per_profile ?? null,
      });
      return reply.code(result.created ? 201 : 200).send(result.identifierType);
    },
  );
  api.get(
    '/v1/tenants/:tenant/identifier-types',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery,
        response: {
          200: z.object({
            identifier_types: z.array(identifierTypeSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listIdentifierTypes(context, request.params.tenant, {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { identifier_types: page.items, next_cursor: page.next_cursor };
    },
  );
  api.put(
    '/v1/tenants/:tenant/placeholders',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        body: z.object({
          values: z.record(
            z.union([z.literal('*'), identifierTypeName]),
            z.array(z.string().min(1).max(320)).max(1000),
          ),
        }),
        response: { 200: placeholdersResponse },
      },
    },
    async (request) => putPlaceholders(context, request.params.tenant, request.body.values),
  );
  api.get(
    '/v1/tenants/:tenant/placeholders',
    {
      config: { access: 'tenant-token' },
      schema: { params: tenantParams, response: { 200: placeholdersResponse } },
    },
    async (request) => getPlaceholders(context, request.params.tenant),
  );
}
