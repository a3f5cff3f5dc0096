import { pathOf } from '../../api.js';
import { ShowMore } from '../../components/show-more.js';
import { Table } from '../../components/table.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { Section } from './loaded.js';

interface Rejection {
  event_id: string | null;
  event_name: string | null;
  reason: string;
  rejected_at: string;
}

interface Erasure {
  erasure_id: string;
  workspace_id: string;
  profile_id: string;
  actor: string;
  erased_at: string;
  purged_at: string | null;
}

/** What ingest refused in the chosen workspace, newest first. */
export function Rejections(props: { tenant: string; workspace: string }) {
  const list = usePagedList<Rejection>(
    'rejections',
    () =>
      `${pathOf`/v1/tenants/${props.tenant}/rejections`}?workspace_id=${encodeURIComponent(props.workspace)}`,
  );
  const rejections = list.rows.value ?? [];
  return (
    <Section
      id="rejections-title"
      title={`Rejections in ${props.tenant} / ${props.workspace}`}
      failure={list.failure.value}
    >
      {rejections.length === 0 ? (
        <p>No rejected event.</p>
      ) : (
        <Table columns={['When', 'Event', 'Reason']}>
          {rejections.map((rejection, index) => (
            // A rejected line may have no event id; pages are only added under the rows shown.
            <tr key={`${index}:${rejection.event_id ?? ''}`}>
              <td>{rejection.rejected_at}</td>
              <td>
                {rejection.event_name ?? '?'} <code>{rejection.event_id ?? ''}</code>
              </td>
              <td>{rejection.reason}</td>
            </tr>
          ))}
        </Table>
      )}
      <ShowMore list={list} what="rejections" />
    </Section>
  );
}

/** The tenant's erasures and when the database file was rewritten without them. */
export function Erasures(props: { tenant: string }) {
  const list = usePagedList<Erasure>(
    'erasures',
    () => pathOf`/v1/tenants/${props.tenant}/erasures`,
  );
  const erasures = list.rows.value ?? [];
  return (
    <Section id="erasures-title" title={`Erasures in ${props.tenant}`} failure={list.failure.value}>
      {erasures.length === 0 ? (
        <p>No erasure.</p>
      ) : (
        <Table columns={['Profile', 'Workspace', 'By', 'Erased', 'Purged from the file']}>
          {erasures.map((erasure) => (
            <tr key={erasure.erasure_id}>
              <th scope="row">
                <code>{erasure.profile_id}</code>
              </th>
              <td>{erasure.workspace_id}</td>
              <td>{erasure.actor}</td>
              <td>{erasure.erased_at}</td>
              <td>{erasure.purged_at ?? 'not yet'}</td>
            </tr>
          ))}
        </Table>
      )}
      <ShowMore list={list} what="erasures" />
    </Section>
  );
}
