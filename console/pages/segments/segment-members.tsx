import { pathOf } from '../../api.js';
import { ShowMore } from '../../components/show-more.js';
import { Table } from '../../components/table.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { session } from '../../session.js';

const PAGE_SIZE = 50;

/** A member as the API's member list gives it: identifiers already masked by the API. */
interface Member {
  profile_id: string;
  email: string | null;
  phone: string | null;
  last_seen_at: string;
}

/** The segment's members, a page at a time, masked as the API masks them. */
export function SegmentMembers({ segmentId, workspace }: { segmentId: string; workspace: string }) {
  const list = usePagedList<Member>(
    'members',
    () => {
      const tenant = session.tenant.value;
      return tenant
        ? `${pathOf`/v1/tenants/${tenant}/segments/${segmentId}/members`}?workspace_id=${encodeURIComponent(workspace)}`
        : null;
    },
    PAGE_SIZE,
  );
  const members = list.rows.value;
  return (
    <section aria-labelledby="members-title">
      <div class="page-head">
        <h2 id="members-title">Members</h2>
        <button type="button" class="quiet" onClick={list.reload}>
          Refresh members
        </button>
      </div>
      {list.failure.value && <p class="error">{list.failure.value}</p>}
      {members === null ? (
        <p class="loading">Loading the members…</p>
      ) : members.length === 0 ? (
        <p>No member yet.</p>
      ) : (
        <Table
          caption="Identifiers masked as the API masks them."
          columns={['Profile', 'Email', 'Phone', 'Last seen']}
        >
          {members.map((member) => (
            <tr key={member.profile_id}>
              <td>
                <a href={`#/profiles/${encodeURIComponent(member.profile_id)}`}>
                  <code>{member.profile_id}</code>
                </a>
              </td>
              <td>{member.email ?? '—'}</td>
              <td>{member.phone ?? '—'}</td>
              <td>{new Date(member.last_seen_at).toLocaleString()}</td>
            </tr>
          ))}
        </Table>
      )}
      <ShowMore list={list} what="members" />
    </section>
  );
}
