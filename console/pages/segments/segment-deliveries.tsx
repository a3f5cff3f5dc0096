import { useSignal, useSignalEffect } from '@preact/signals';
import { api, pathOf } from '../../api.js';
import { canWrite, session } from '../../session.js';

const PAGE_SIZE = 50;
const STATUSES = ['failed', 'pending', 'delivered'] as const;

interface Delivery {
  webhook_id: string;
  profile_id: string;
  type: 'segment.entered' | 'segment.exited';
  backfill: boolean;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  created_at: string;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  last_error: string | null;
}

/**
 * The segment's webhook deliveries, newest first, with the error of each one's last attempt and a
 * retry for those given up as failed (tenant tokens): a failing receiver shows here, not only in
 * the operator's outbox.
 */
export function SegmentDeliveries({
  segmentId,
  workspace,
}: {
  segmentId: string;
  workspace: string;
}) {
  const status = useSignal<string>('');
  const deliveries = useSignal<Delivery[] | null>(null);
  const more = useSignal(false);
  const failure = useSignal<string | null>(null);
  const notice = useSignal<string | null>(null);
  const reloads = useSignal(0);

  useSignalEffect(() => {
    const tenant = session.tenant.value;
    const wanted = status.value;
    reloads.value;
    if (!tenant) return;
    let stale = false;
    const query = `?workspace_id=${encodeURIComponent(workspace)}&limit=${PAGE_SIZE}${
      wanted ? `&status=${wanted}` : ''
    }`;
    api<{ webhooks: Delivery[]; next_cursor: string | null }>(
      'GET',
      `${pathOf`/v1/tenants/${tenant}/segments/${segmentId}/webhooks`}${query}`,
    ).then(
      (page) => {
        if (stale) return;
        deliveries.value = page.webhooks;
        more.value = page.next_cursor !== null;
        failure.value = null;
      },
      (error: Error) => {
        if (!stale) failure.value = error.message;
      },
    );
    return () => {
      stale = true;
    };
  });

  const retry = async (webhookId: string | null) => {
    const tenant = session.tenant.value;
    if (!tenant) return;
    try {
      const answer = await api<{ requeued: number }>(
        'POST',
        pathOf`/v1/tenants/${tenant}/segments/${segmentId}/webhooks/retry`,
        { workspace_id: workspace, ...(webhookId ? { webhook_id: webhookId } : {}) },
      );
      notice.value = `${answer.requeued} ${answer.requeued === 1 ? 'delivery' : 'deliveries'} queued again.`;
    } catch (error) {
      notice.value = `Retry refused: ${(error as Error).message}`;
    }
    reloads.value += 1;
  };

  const failed = deliveries.value?.some((delivery) => delivery.status === 'failed') ?? false;
  return (
    <section aria-labelledby="deliveries-title">
      <div class="page-head">
        <h2 id="deliveries-title">Webhook deliveries</h2>
        <label class="inline">
          Show
          <select
            value={status.value}
            onChange={(event) => {
              status.value = (event.target as HTMLSelectElement).value;
            }}
          >
            <option value="">every status</option>
            {STATUSES.map((option) => (
              <option key={option} value={option}>
                {option}
              </option>
            ))}
          </select>
        </label>
        <button type="button" class="quiet" onClick={() => (reloads.value += 1)}>
          Refresh deliveries
        </button>
        {canWrite.value && failed && (
          <button type="button" onClick={() => retry(null)}>
            Retry every failed delivery
          </button>
        )}
      </div>
      <p role="status" class="help">
        {notice.value ?? ''}
      </p>
      {failure.value && <p class="error">{failure.value}</p>}
      {deliveries.value === null ? (
        <p class="loading">Loading the deliveries…</p>
      ) : deliveries.value.length === 0 ? (
        <p>No delivery{status.value ? ` ${status.value}` : ''}.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="help">
              Newest first{more.value ? `, the latest ${PAGE_SIZE}` : ''}.
            </caption>
            <thead>
              <tr>
                <th scope="col">Queued</th>
                <th scope="col">Event</th>
                <th scope="col">Profile</th>
                <th scope="col">Status</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last error</th>
                {canWrite.value && <th scope="col">Action</th>}
              </tr>
            </thead>
            <tbody>
              {deliveries.value.map((delivery) => (
                <tr key={delivery.webhook_id}>
                  <td>{new Date(delivery.created_at).toLocaleString()}</td>
                  <td>
                    {delivery.type}
                    {delivery.backfill ? ' (backfill)' : ''}
                  </td>
                  <td>
                    <code>{delivery.profile_id}</code>
                  </td>
                  <td class={delivery.status === 'failed' ? 'error' : undefined}>
                    {delivery.status}
                  </td>
                  <td class="number">{delivery.attempts}</td>
                  <td>{delivery.last_error ?? '—'}</td>
                  {canWrite.value && (
                    <td>
                      {delivery.status === 'failed' && (
                        <button
                          type="button"
                          class="quiet"
                          aria-label={`Retry delivery ${delivery.webhook_id}`}
                          onClick={() => retry(delivery.webhook_id)}
                        >
                          Retry
                        </button>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
