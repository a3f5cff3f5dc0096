import { z } from 'zod';
import type { Context } from '../context.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';

export const WEBHOOK_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type WebhookStatus = (typeof WEBHOOK_STATUSES)[number];

/** A webhook in the outbox, as the operator lists it. */
export const outboxEntrySchema = z.object({
  webhook_id: z.string(),
  tenant_id: z.string(),
  workspace_id: z.string(),
  segment_id: z.string(),
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
  queryName: 'webhooks_list' | 'webhooks_list_for_segment',
  scope: Record<string, string>,
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

/** One segment's place in the outbox: a tenant sees and retries its own segment's deliveries. */
export interface OutboxSegment {
  tenantId: string;
  workspaceId: string;
  segmentId: string;
}

function segmentParams(segment: OutboxSegment) {
  return {
    tenant_id: segment.tenantId,
    workspace_id: segment.workspaceId,
    segment_id: segment.segmentId,
  };
}

export async function listSegmentWebhooks(
  context: Context,
  segment: OutboxSegment,
  query: PageQuery & { status: WebhookStatus | null },
): Promise<Page<OutboxEntry>> {
  return outboxPage(context, 'webhooks_list_for_segment', segmentParams(segment), query);
}

/** Puts one segment's failed deliveries (one, or all) back in the queue; answers how many. */
export async function retrySegmentWebhooks(
  context: Context,
  segment: OutboxSegment,
  webhookId: string | null,
): Promise<number> {
  return context.store.write((session) =>
    session.run('webhooks_requeue_failed_for_segment', {
      ...segmentParams(segment),
      webhook_id: webhookId,
    }),
  );
}
