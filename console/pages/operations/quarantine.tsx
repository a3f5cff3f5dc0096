import { api } from '../../api.js';
import { RetryEvery } from '../../components/retry-every.js';
import { ShowMore } from '../../components/show-more.js';
import { RowAction, Table } from '../../components/table.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { useRetry } from '../../hooks/use-retry.js';
import { Section } from './loaded.js';

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
  const list = usePagedList<QuarantinedFile>('quarantined', () => '/v1/operator/quarantine');
  const retry = useRetry(
    (id) =>
      api<{ requeued: string[] }>(
        'POST',
        '/v1/operator/quarantine/retry',
        id === null ? {} : { quarantine_id: id },
      ),
    (answer) => `Put back ${answer.requeued.length} file(s) for ingest.`,
    list.reload,
  );
  const files = list.rows.value ?? [];
  return (
    <Section id="quarantine-title" title="Quarantined parts" failure={list.failure.value}>
      {files.length === 0 ? (
        <p>Nothing quarantined.</p>
      ) : (
        <Table columns={['Part', 'Tenant / workspace', 'Lines', 'Reason', 'Since', 'Actions']}>
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
                <RowAction
                  label={`Retry quarantined part ${file.quarantine_id}`}
                  onClick={() => retry.retry(file.quarantine_id)}
                >
                  Retry
                </RowAction>
              </td>
            </tr>
          ))}
        </Table>
      )}
      <ShowMore list={list} what="quarantined parts" />
      <RetryEvery retry={retry} label="Retry every quarantined part" shown={files.length > 0} />
    </Section>
  );
}
