import { pathOf } from '../../api.js';
import { Section, useLoaded } from './loaded.js';

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
  const { data, failure } = useLoaded<{ rejections: Rejection[] }>(
    `${pathOf`/v1/tenants/${props.tenant}/rejections`}?limit=100&workspace_id=${encodeURIComponent(props.workspace)}`,
  );
  const rejections = data.value?.rejections ?? [];
  return (
    <Section
      id="rejections-title"
      title={`Rejections in ${props.tenant} / ${props.workspace}`}
      failure={failure.value}
    >
      {rejections.length === 0 ? (
        <p>No rejected event.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Event</th>
                <th scope="col">Reason</th>
              </tr>
            </thead>
            <tbody>
              {rejections.map((rejection, index) => (
                // A rejected line may have no event id; the list is replaced whole.
                <tr key={`${index}:${rejection.event_id ?? ''}`}>
                  <td>{rejection.rejected_at}</td>
                  <td>
                    {rejection.event_name ?? '?'} <code>{rejection.event_id ?? ''}</code>
                  </td>
                  <td>{rejection.reason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}

/** The tenant's erasures and when the database file was rewritten without them. */
export function Erasures(props: { tenant: string }) {
  const { data, failure } = useLoaded<{ erasures: Erasure[] }>(
    `${pathOf`/v1/tenants/${props.tenant}/erasures`}?limit=100`,
  );
  const erasures = data.value?.erasures ?? [];
  return (
    <Section id="erasures-title" title={`Erasures in ${props.tenant}`} failure={failure.value}>
      {erasures.length === 0 ? (
        <p>No erasure.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Profile</th>
                <th scope="col">Workspace</th>
                <th scope="col">By</th>
                <th scope="col">Erased</th>
                <th scope="col">Purged from the file</th>
              </tr>
            </thead>
            <tbody>
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
            </tbody>
          </table>
        </div>
      )}
    </Section>
  );
}
