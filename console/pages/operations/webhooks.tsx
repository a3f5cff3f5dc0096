import { api } from '../../api.js';
import { RetryEvery } from '../../components/retry-every.js';
import { ShowMore } from '../../components/show-more.js';
import { RowAction, Table } from '../../components/table.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { useRetry } from '../../hooks/use-retry.js';
import { Section } from './loaded.js';

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
  const list = usePagedList<OutboxEntry>('webhooks', () => '/v1/operator/webhooks?status=failed');
  const retry = useRetry(
    (id) =>
      api<{ requeued: number }>(
        'POST',
        '/v1/operator/webhooks/retry',
        id === null ? {} : { webhook_id: id },
      ),
    (answer) => `Queued ${answer.requeued} delivery(ies) again.`,
    list.reload,
  );
  const failed = list.rows.value ?? [];
  return (
    <Section
      id="webhooks-title"
      title="Webhook outbox: failed deliveries"
      failure={list.failure.value}
    >
      {failed.length === 0 ? (
        <p>No failed delivery.</p>
      ) : (
        <Table
          columns={[
            'Delivery',
            'Tenant / workspace',
            'Segment',
            'Attempts',
            'Last error',
            'Actions',
          ]}
        >
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
                <RowAction
                  label={`Retry delivery ${entry.webhook_id}`}
                  onClick={() => retry.retry(entry.webhook_id)}
                >
                  Retry
                </RowAction>
              </td>
            </tr>
          ))}
        </Table>
      )}
      <ShowMore list={list} what="failed deliveries" />
      <RetryEvery retry={retry} label="Retry every failed delivery" shown={failed.length > 0} />
    </Section>
  );
}
