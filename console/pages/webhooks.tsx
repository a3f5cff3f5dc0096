import { useSignal } from '@preact/signals';
import { api, pathOf } from '../api.js';
import { Table } from '../components/table.js';
import { usePolled } from '../hooks/use-polled.js';
import { currentScope } from './scope.js';
import { Deliveries } from './webhooks/deliveries.js';

/** The totals are asked again this often while the page is open. */
const REFRESH_MS = 10_000;

interface CountsByStatus {
  pending: number;
  delivered: number;
  failed: number;
  /** Not sent: the profile's consent did not grant what the segment needs. */
  withheld: number;
}

interface WebhookTotals {
  destination_host: string | null;
  last_24h: CountsByStatus;
  last_7d: CountsByStatus;
}

const STATUSES = ['delivered', 'pending', 'failed', 'withheld'] as const;

/** The workspace's deliveries queued over a day and a week, by status, and where they go. */
function Totals() {
  const totals = useSignal<WebhookTotals | null>(null);
  const { failure } = usePolled(
    (tenant, workspace) =>
      api<WebhookTotals>(
        'GET',
        `${pathOf`/v1/tenants/${tenant}/webhook-totals`}?workspace_id=${encodeURIComponent(workspace)}`,
      ),
    (answer) => {
      totals.value = answer;
    },
    REFRESH_MS,
  );
  const shown = totals.value;
  return (
    <>
      {failure.value && <p class="error">{failure.value}</p>}
      {shown && (
        <>
          <p>
            Deliveries go to{' '}
            {shown.destination_host ? (
              <code>{shown.destination_host}</code>
            ) : (
              'no receiver: this deployment has no webhook URL'
            )}
            .
          </p>
          <Table
            caption="Deliveries queued, by status"
            columns={['Status', 'Last 24 h', 'Last 7 days']}
          >
            {STATUSES.map((status) => (
              <tr key={status}>
                <th scope="row">{status}</th>
                <td class="number">{shown.last_24h[status]}</td>
                <td
                  class={`number${status === 'failed' && shown.last_7d.failed > 0 ? ' error' : ''}`}
                >
                  {shown.last_7d[status]}
                </td>
              </tr>
            ))}
          </Table>
        </>
      )}
    </>
  );
}

/**
 * `#/webhooks`: the workspace's webhook deliveries across its segments, their totals, the
 * failures with their errors and a retry (tenant tokens). Operators keep the outbox of every
 * tenant on the operations page.
 */
export function Webhooks() {
  const scope = currentScope();
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      {!scope ? (
        <p>Choose a workspace.</p>
      ) : (
        <>
          <Totals />
          <Deliveries key={scope.workspace} segmentId={null} workspace={scope.workspace} />
        </>
      )}
    </section>
  );
}
