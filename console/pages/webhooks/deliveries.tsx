import { useSignal } from '@preact/signals';
import { api, pathOf } from '../../api.js';
import { Options } from '../../components/field.js';
import { RetryEvery } from '../../components/retry-every.js';
import { ShowMore } from '../../components/show-more.js';
import { RowAction, Table } from '../../components/table.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { useRetry } from '../../hooks/use-retry.js';
import { canWrite, session } from '../../session.js';

const PAGE_SIZE = 50;
const STATUSES = ['failed', 'pending', 'delivered', 'withheld'] as const;

interface Delivery {
  webhook_id: string;
  /** Null for a `consent.changed` delivery, about a profile rather than a segment. */
  segment_id: string | null;
  profile_id: string;
  type: 'segment.entered' | 'segment.exited';
  backfill: boolean;
  status: 'pending' | 'delivered' | 'failed' | 'withheld';
  attempts: number;
  created_at: string;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  last_error: string | null;
}

/**
 * Webhook deliveries of a workspace's segments, or of one segment (`segmentId`), newest first,
 * with the error of each one's last attempt and a retry for those given up as failed (tenant
 * tokens): a failing receiver shows here, not only in the operator's outbox.
 */
export function Deliveries({
  segmentId,
  workspace,
}: {
  segmentId: string | null;
  workspace: string;
}) {
  const status = useSignal<string>('');
  const path = () => {
    const tenant = session.tenant.value;
    return tenant ? pathOf`/v1/tenants/${tenant}/webhooks` : null;
  };
  const list = usePagedList<Delivery>(
    'webhooks',
    () => {
      const base = path();
      if (!base) return null;
      const query = new URLSearchParams({ workspace_id: workspace });
      if (segmentId) query.set('segment_id', segmentId);
      if (status.value) query.set('status', status.value);
      return `${base}?${query}`;
    },
    PAGE_SIZE,
  );
  const retry = useRetry(
    (webhookId) =>
      api<{ requeued: number }>('POST', `${path() ?? ''}/retry`, {
        workspace_id: workspace,
        ...(segmentId ? { segment_id: segmentId } : {}),
        ...(webhookId ? { webhook_id: webhookId } : {}),
      }),
    (answer) =>
      `${answer.requeued} ${answer.requeued === 1 ? 'delivery' : 'deliveries'} queued again.`,
    list.reload,
  );

  const deliveries = list.rows.value;
  const failed = deliveries?.some((delivery) => delivery.status === 'failed') ?? false;
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
            <Options values={STATUSES} />
          </select>
        </label>
        <button type="button" class="quiet" onClick={list.reload}>
          Refresh deliveries
        </button>
      </div>
      <RetryEvery
        retry={retry}
        label="Retry every failed delivery"
        shown={canWrite.value && failed}
      />
      {list.failure.value && <p class="error">{list.failure.value}</p>}
      {deliveries === null ? (
        <p class="loading">Loading the deliveries…</p>
      ) : deliveries.length === 0 ? (
        <p>No delivery{status.value ? ` ${status.value}` : ''}.</p>
      ) : (
        <Table
          caption="Newest first."
          columns={[
            'Queued',
            segmentId === null && 'Segment',
            'Event',
            'Profile',
            'Status',
            'Attempts',
            'Last error',
            canWrite.value && 'Action',
          ]}
        >
          {deliveries.map((delivery) => (
            <tr key={delivery.webhook_id}>
              <td>{new Date(delivery.created_at).toLocaleString()}</td>
              {segmentId === null && (
                <td>
                  {delivery.segment_id === null ? (
                    '—'
                  ) : (
                    <a href={`#/segments/${encodeURIComponent(delivery.segment_id)}`}>
                      {delivery.segment_id}
                    </a>
                  )}
                </td>
              )}
              <td>
                {delivery.type}
                {delivery.backfill ? ' (backfill)' : ''}
              </td>
              <td>
                <a href={`#/profiles/${encodeURIComponent(delivery.profile_id)}`}>
                  <code>{delivery.profile_id}</code>
                </a>
              </td>
              <td class={delivery.status === 'failed' ? 'error' : undefined}>{delivery.status}</td>
              <td class="number">{delivery.attempts}</td>
              <td>{delivery.last_error ?? '—'}</td>
              {canWrite.value && (
                <td>
                  {delivery.status === 'failed' && (
                    <RowAction
                      label={`Retry delivery ${delivery.webhook_id}`}
                      onClick={() => retry.retry(delivery.webhook_id)}
                    >
                      Retry
                    </RowAction>
                  )}
                </td>
              )}
            </tr>
          ))}
        </Table>
      )}
      <ShowMore list={list} what="deliveries" />
    </section>
  );
}
