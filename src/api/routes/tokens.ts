import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { idSchema } from '../../ids.js';
import {
  issuedTokenSchema,
  issueToken,
  listTokens,
  revokeToken,
  tokenListingSchema,
} from '../../tenancy/tokens.js';
import { noContent, pagingQuery, tenantParams } from '../schemas.js';

const tokenName = z.string().min(1).max(200);

const mintBody = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('workspace'), workspace_id: idSchema, name: tokenName }),
  z.object({ kind: z.literal('collector'), workspace_id: idSchema.nullish(), name: tokenName }),
  z.object({ kind: z.literal('write_key'), workspace_id: idSchema, name: tokenName }),
]);

export function tokenRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.post(
    '/v1/tenants/:tenant/tokens',
    {
      config: { access: 'tenant-token' },
      schema: { params: tenantParams, body: mintBody, response: { 201: issuedTokenSchema } },
    },
    async (request, reply) => {
      const { kind, workspace_id, name } = request.body;
      const issued = await issueToken(context, request.params.tenant, {
        kind,
        workspaceId: workspace_id ?? null,
        name,
      });
      return reply.code(201).send(issued);
    },
  );
  api.get(
    '/v1/tenants/:tenant/tokens',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams,
        querystring: pagingQuery,
        response: {
          200: z.object({
            tokens: z.array(tokenListingSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listTokens(context, request.params.tenant, {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { tokens: page.items, next_cursor: page.next_cursor };
    },
  );
  api.delete(
    '/v1/tenants/:tenant/tokens/:token_id',
    {
      config: { access: 'tenant-token' },
      schema: {
        params: tenantParams.extend({
          token_id: z.string().regex(/^tok_[0-9A-Za-z]+$/, 'is not a token id'),
        }),
        response: { 204: noContent },
      },
    },
    async (request, reply) => {
      await revokeToken(context, request.params.tenant, request.params.token_id);
      return reply.code(204).send(null);
    },
  );
}
