import { useSignal } from '@preact/signals';
import { api } from '../../api.js';
import { messageOf } from '../../components/field.js';
import { Section, useLoaded } from './loaded.js';

interface QuarantinedFile {
  quarantine_id: string;
  tenant_id: string | null;
  workspace_id: string | null;
  lines: number;
  bytes: number;
  reason: string;
  quarantined_at: string;
}

/** Landing files ingest set aside, and putting them back to be ingested again. */
export function Quarantine() {
  const { data, failure, reload } = useLoaded<{ quarantined: QuarantinedFile[] }>(
    '/v1/operator/quarantine?limit=100',
  );
  const outcome = useSignal<string | null>(null);
  const retry = async (id: string | null) => {
    try {
      const answer = await api<{ requeued: string[] }>(
        'POST',
        '/v1/operator/quarantine/retry',
        id === null ? {} : { quarantine_id: id },
      );
      outcome.value = `Put back ${answer.requeued.length} file(s) for ingest.`;
      reload();
    } catch (error) {
      outcome.value = messageOf(error);
    }
  };
  const files = data.value?.quarantined ?? [];
  return (
    <Section id="quarantine-title" title="Quarantined parts" failure={failure.value}>
      {files.length === 0 ? (
        <p>Nothing quarantined.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Part</th>
                <th scope="col">Tenant / workspace</th>
                <th scope="col">Lines</th>
                <th scope="col">Reason</th>
                <th scope="col">Since</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {files.map((file) => (
                <tr key={file.quarantine_id}>
                  <th scope="row">
                    <code>{file.quarantine_id}</code>
                  </th>
                  <td>
                    {file.tenant_id ?? '?'} / {file.workspace_id ?? '?'}
                  </td>
                  <td>{file.lines}</td>
                  <td>{file.reason}</td>
                  <td>{file.quarantined_at}</td>
                  <td>
                    <button
                      type="button"
                      class="quiet"
                      aria-label={`Retry quarantined part ${file.quarantine_id}`}
                      onClick={() => retry(file.quarantine_id)}
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
        {files.length > 0 && (
          <button type="button" onClick={() => retry(null)}>
            Retry every quarantined part
          </button>
        )}
      </div>
      {outcome.value && <p role="status">{outcome.value}</p>}
    </Section>
  );
}
