import type { Context } from '../context.js';

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

export async function listWebhooks(
  context: Context,
  query: { status: WebhookStatus | null; limit: number },
): Promise<OutboxEntry[]> {
  return context.store.read((session) =>
    session.all<OutboxEntry>('webhooks_list', { status: query.status, limit: query.limit }),
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
