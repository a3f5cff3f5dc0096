import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';

/** `withheld`: not sent, for want of the profile's consent at delivery time ("Consent"). */
export const WEBHOOK_STATUSES = ['pending', 'delivered', 'failed', 'withheld'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/** A webhook in the outbox, as the operator lists it. */
export const outboxEntrySchema = z.object({
  webhook_id: z.string(),
  tenant_id: z.string(),
  workspace_id: z.string(),
  /** Null for a `consent.changed` delivery, which is about a profile, not a segment. */
  segment_id: z.string().nullable(),
  profile_id: z.string(),
  type: z.enum(['segment.entered', 'segment.exited']),
  backfill: z.boolean(),
  status: z.enum(WEBHOOK_STATUSES),
  attempts: z.number(),
  created_at: z.string(),
  first_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  last_error: z.string().nullable(),
});

export type OutboxEntry = z.infer<typeof outboxEntrySchema>;

const webhookCursor = z.strictObject({ c: z.iso.datetime(), h: z.string() });

export async function listWebhooks(
  context: Context,
  query: PageQuery & { status: WebhookStatus | null },
): Promise<Page<OutboxEntry>> {
  return outboxPage(context, 'webhooks_list', {}, query);
}

/** One page of the outbox by `queryName`, newest first, after the query's cursor. */
async function outboxPage(
  context: Context,
  queryName: 'webhooks_list' | 'webhooks_list_for_workspace',
  scope: Record<string, string | null>,
  query: PageQuery & { status: WebhookStatus | null },
): Promise<Page<OutboxEntry>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, webhookCursor);
  const rows = await context.store.read((session) =>
    session.all<OutboxEntry>(queryName, {
      ...scope,
      status: query.status,
      after_created: after?.c ?? null,
      after_webhook: after?.h ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ c: row.created_at, h: row.webhook_id }),
    (row) => row,
  );
}

/** Puts failed deliveries (one, or all) back in the queue; answers how many. */
export async function retryFailedWebhooks(
  context: Context,
  webhookId: string | null,
): Promise<number> {
  return context.store.write((session) =>
    session.run('webhooks_requeue_failed', { webhook_id: webhookId }),
  );
}

/**
 * A tenant's place in the outbox: a workspace, or one of its segments. A tenant sees and retries
 * its own deliveries only.
 */
export interface OutboxScope {
  tenantId: string;
  workspaceId: string;
  /** Null: every segment of the workspace. */
  segmentId: string | null;
}

function scopeParams(scope: OutboxScope) {
  return {
    tenant_id: scope.tenantId,
    workspace_id: scope.workspaceId,
    segment_id: scope.segmentId,
  };
}

/** A page of deliveries as the routes answer it (operator's outbox, a tenant's own). */
export const webhookPageSchema = z.object({
  webhooks: z.array(outboxEntrySchema),
  next_cursor: z.string().nullable(),
});

/** A tenant's own id of a delivery to retry: any text, compared as data. */
export const retriedWebhookSchema = z.string().min(1).max(100).nullish();

export async function tenantWebhookPage(
  context: Context,
  scope: OutboxScope,
  query: { limit: number; cursor?: string | undefined; status?: WebhookStatus | undefined },
): Promise<z.infer<typeof webhookPageSchema>> {
  const page = await outboxPage(context, 'webhooks_list_for_workspace', scopeParams(scope), {
    limit: query.limit,
    cursor: query.cursor ?? null,
    status: query.status ?? null,
  });
  return { webhooks: page.items, next_cursor: page.next_cursor };
}

/** Puts a workspace's or a segment's failed deliveries (one, or all) back in the queue; answers how many. */
export async function retryTenantWebhooks(
  context: Context,
  scope: OutboxScope,
  webhookId: string | null,
): Promise<number> {
  return context.store.write((session) =>
    session.run('webhooks_requeue_failed_for_workspace', {
      ...scopeParams(scope),
      webhook_id: webhookId,
    }),
  );
}

const countsByStatus = z.object({
  pending: z.number(),
  delivered: z.number(),
  failed: z.number(),
  withheld: z.number(),
});

export const webhookTotalsSchema = z.object({
  /** Where deliveries go: the host of the deployment's webhook URL only, null without one. */
  destination_host: z.string().nullable(),
  last_24h: countsByStatus,
  last_7d: countsByStatus,
});

export type WebhookTotals = z.infer<typeof webhookTotalsSchema>;

const DAY_MS = 24 * 60 * 60 * 1000;

/** A workspace's deliveries queued in the last 24 hours and 7 days, by status. */
export async function webhookTotals(
  context: Context,
  workspace: OutboxScope,
): Promise<WebhookTotals> {
  const now = Date.parse(nowIso(context));
  const rows = await context.store.read((session) =>
    session.all<{ status: WebhookStatus; last_24h: number; last_7d: number }>(
      'webhooks_totals_for_workspace',
      {
        tenant_id: workspace.tenantId,
        workspace_id: workspace.workspaceId,
        since_day: new Date(now - DAY_MS).toISOString(),
        since_week: new Date(now - 7 * DAY_MS).toISOString(),
      },
    ),
  );
  const totals: WebhookTotals = {
    destination_host: context.config.webhook_url ? new URL(context.config.webhook_url).host : null,
    last_24h: { pending: 0, delivered: 0, failed: 0, withheld: 0 },
    last_7d: { pending: 0, delivered: 0, failed: 0, withheld: 0 },
  };
  for (const row of rows) {
    totals.last_24h[row.status] = row.last_24h;
    totals.last_7d[row.status] = row.last_7d;
  }
  return totals;
}
