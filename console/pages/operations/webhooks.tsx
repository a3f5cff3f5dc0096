import { useSignal } from '@preact/signals';
import { api } from '../../api.js';
import { messageOf } from '../../components/field.js';
import { Section, useLoaded } from './loaded.js';

interface OutboxEntry {
  webhook_id: string;
  tenant_id: string;
  workspace_id: string;
  segment_id: string;
  type: string;
  attempts: number;
  last_attempt_at: string | null;
  last_error: string | null;
}

/** Deliveries the outbox gave up on, with their last error, and sending them again. */
export function FailedWebhooks() {
  const { data, failure, reload } = useLoaded<{ webhooks: OutboxEntry[] }>(
    '/v1/operator/webhooks?status=failed&limit=100',
  );
  const outcome = useSignal<string | null>(null);
  const retry = async (id: string | null) => {
    try {
      const answer = await api<{ requeued: number }>(
        'POST',
        '/v1/operator/webhooks/retry',
        id === null ? {} : { webhook_id: id },
      );
      outcome.value = `Queued ${answer.requeued} delivery(ies) again.`;
      reload();
    } catch (error) {
      outcome.value = messageOf(error);
    }
  };
  const failed = data.value?.webhooks ?? [];
  return (
    <Section id="webhooks-title" title="Webhook outbox: failed deliveries" failure={failure.value}>
      {failed.length === 0 ? (
        <p>No failed delivery.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Delivery</th>
                <th scope="col">Tenant / workspace</th>
                <th scope="col">Segment</th>
                <th scope="col">Attempts</th>
                <th scope="col">Last error</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {failed.map((entry) => (
                <tr key={entry.webhook_id}>
                  <th scope="row">
                    <code>{entry.webhook_id}</code>
                  </th>
                  <td>
                    {entry.tenant_id} / {entry.workspace_id}
                  </td>
                  <td>
                    {entry.segment_id} ({entry.type})
                  </td>
                  <td>{entry.attempts}</td>
                  <td>
                    {entry.last_error ?? ''}
                    {entry.last_attempt_at ? ` at ${entry.last_attempt_at}` : ''}
                  </td>
                  <td>
                    <button
                      type="button"
                      class="quiet"
                      aria-label={`Retry delivery ${entry.webhook_id}`}
                      onClick={() => retry(entry.webhook_id)}
                    >
                      Retry
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="actions">
        {failed.length > 0 && (
          <button type="button" onClick={() => retry(null)}>
            Retry every failed delivery
          </button>
        )}
      </div>
      {outcome.value && <p role="status">{outcome.value}</p>}
    </Section>
  );
}
