import { z } from 'zod';
import type { Context } from '../context.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';

export type WebhookStatus = 'pending' | 'delivered' | 'failed';

export interface OutboxEntry {
  webhook_id: string;
  tenant_id: string;
  workspace_id: string;
  segment_id: string;
  profile_id: string;
  type: 'segment.entered' | 'segment.exited';
  backfill: boolean;
  status: WebhookStatus;
  attempts: number;
  created_at: string;
  first_attempt_at: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  last_error: string | null;
}

const webhookCursor = z.strictObject({ c: z.iso.datetime(), h: z.string() });

export async function listWebhooks(
  context: Context,
  query: PageQuery & { status: WebhookStatus | null },
): Promise<Page<OutboxEntry>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, webhookCursor);
  const rows = await context.store.read((session) =>
    session.all<OutboxEntry>('webhooks_list', {
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
