import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { readableResources } from '../../tenancy/access.js';

export function whoamiRoutes(app: FastifyInstance): void {
  app.withTypeProvider<ZodTypeProvider>().get(
    '/v1/whoami',
    {
      config: { access: 'any-token' },
      schema: {
        response: {
          200: z.object({
            token_id: z.string(),
            kind: z.enum(['operator', 'tenant', 'workspace', 'collector', 'write_key']),
            tenant_id: z.string().nullable(),
            workspace_id: z.string().nullable(),
            can_read: z.array(z.string()),
            can_write: z.boolean(),
          }),
        },
      },
    },
    async (request) => {
      const principal = request.principal;
      return {
        token_id: principal.tokenId,
        kind: principal.kind,
        tenant_id: principal.tenantId,
        workspace_id: principal.workspaceId,
        can_read: readableResources(principal),
        can_write: principal.kind === 'tenant' || principal.kind === 'operator',
      };
    },
  );
}
