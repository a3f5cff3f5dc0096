import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { manifestSchema as backupManifestResponse } from '../../backup/manifest.js';
import { writeBackup } from '../../backup/write.js';
import type { Context } from '../../context.js';
import { idSchema } from '../../ids.js';
import {
  quarantinedFileSchema,
  quarantinePage,
  retryQuarantined,
} from '../../quarantine/quarantine.js';
import { EXPORT_FORMATS, writeParquetExport } from '../../store/parquet-export.js';
import { writeSnapshot } from '../../store/snapshot.js';
import { createTenant, issueTenantToken, listTenants } from '../../tenancy/tenants.js';
import { issuedTokenSchema } from '../../tenancy/tokens.js';
import {
  listWebhooks,
  retryFailedWebhooks,
  WEBHOOK_STATUSES,
  webhookPageSchema,
} from '../../webhooks/outbox.js';
import { optionalBody, pagingQuery, tenantParams } from '../schemas.js';

/**
 * Operator-only routes behind the CLI's `cds tenants`, `cds tokens issue-tenant`, `cds webhooks`,
 * `cds ingest quarantine`, `cds snapshot`, `cds export` and `cds backup`.
 * Tenant tokens are issued by the operator, never by a tenant, and the webhook receiver is set per
 * environment: these routes take only the operator credential.
 */
export function operatorRoutes(app: FastifyInstance, context: Context): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.post(
    '/v1/operator/tenants',
    {
      config: { access: 'operator' },
      schema: {
        body: z.object({ tenant_id: idSchema, workspaces: z.array(idSchema).default([]) }),
        response: {
          201: z.object({
            tenant_id: z.string(),
            workspaces: z.array(z.string()),
            tenant_token: issuedTokenSchema,
          }),
        },
      },
    },
    async (request, reply) => {
      const { tenant_id, workspaces } = request.body;
      const token = await createTenant(context, tenant_id, workspaces);
      return reply
        .code(201)
        .send({ tenant_id, workspaces: [...new Set(workspaces)], tenant_token: token });
    },
  );
  api.get(
    '/v1/operator/tenants',
    {
      config: { access: 'operator' },
      schema: {
        querystring: pagingQuery,
        response: {
          200: z.object({
            tenants: z.array(
              z.object({ tenant_id: z.string(), created_at: z.string(), workspaces: z.number() }),
            ),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await listTenants(context, {
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { tenants: page.items, next_cursor: page.next_cursor };
    },
  );
  api.post(
    '/v1/operator/tenants/:tenant/tenant-tokens',
    {
      config: { access: 'operator' },
      schema: {
        params: tenantParams,
        body: optionalBody(z.object({ name: z.string().max(200).nullish() })),
        response: { 201: issuedTokenSchema },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await issueTenantToken(context, request.params.tenant, request.body.name ?? null)),
  );
  api.get(
    '/v1/operator/webhooks',
    {
      config: { access: 'operator' },
      schema: {
        querystring: pagingQuery.extend({
          status: z.enum(WEBHOOK_STATUSES).optional(),
        }),
        response: { 200: webhookPageSchema },
      },
    },
    async (request) => {
      const page = await listWebhooks(context, {
        status: request.query.status ?? null,
        limit: request.query.limit,
        cursor: request.query.cursor ?? null,
      });
      return { webhooks: page.items, next_cursor: page.next_cursor };
    },
  );
  api.post(
    '/v1/operator/webhooks/retry',
    {
      config: { access: 'operator' },
      schema: {
        body: optionalBody(z.object({ webhook_id: z.string().min(1).nullish() })),
        response: { 200: z.object({ requeued: z.number() }) },
      },
    },
    async (request) => ({
      requeued: await retryFailedWebhooks(context, request.body.webhook_id ?? null),
    }),
  );
  api.get(
    '/v1/operator/quarantine',
    {
      config: { access: 'operator' },
      schema: {
        querystring: pagingQuery,
        response: {
          200: z.object({
            quarantined: z.array(quarantinedFileSchema),
            next_cursor: z.string().nullable(),
          }),
        },
      },
    },
    async (request) => {
      const page = await quarantinePage(context.dataDir, request.query.limit, request.query.cursor);
      return { quarantined: page.items, next_cursor: page.next_cursor };
    },
  );
  api.post(
    '/v1/operator/quarantine/retry',
    {
      config: { access: 'operator' },
      schema: {
        body: optionalBody(z.object({ quarantine_id: z.string().min(1).max(200).nullish() })),
        response: { 200: z.object({ requeued: z.array(z.string()) }) },
      },
    },
    async (request) => ({
      requeued: await retryQuarantined(context.dataDir, request.body.quarantine_id ?? undefined),
    }),
  );
  api.post(
    '/v1/operator/snapshots',
    {
      config: { access: 'operator' },
      schema: {
        body: z.object({ path: z.string().min(1), replace: z.boolean().default(false) }),
        response: {
          201: z.object({ path: z.string(), rows: z.record(z.string(), z.number()) }),
        },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(
          await writeSnapshot(context.store, request.body.path, { replace: request.body.replace }),
        ),
  );
  api.post(
    '/v1/operator/exports',
    {
      config: { access: 'operator' },
      schema: {
        body: z.object({ dir: z.string().min(1), format: z.enum(EXPORT_FORMATS) }),
        response: {
          201: z.object({
            dir: z.string(),
            format: z.enum(EXPORT_FORMATS),
            rows: z.record(z.string(), z.number()),
          }),
        },
      },
    },
    async (request, reply) =>
      reply.code(201).send(await writeParquetExport(context.store, request.body.dir)),
  );
  api.post(
    '/v1/operator/backups',
    {
      config: { access: 'operator' },
      schema: {
        body: z.object({
          dir: z
            .string()
            .min(1)
            .describe('an absolute path of a new or empty folder on the server'),
          with_key: z.boolean().default(false),
        }),
        response: { 201: z.object({ dir: z.string(), manifest: backupManifestResponse }) },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await writeBackup(context, request.body.dir, { withKey: request.body.with_key })),
  );
}
