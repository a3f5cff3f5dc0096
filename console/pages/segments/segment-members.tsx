import { useSignal, useSignalEffect } from '@preact/signals';
import { api, pathOf } from '../../api.js';
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
  const members = useSignal<Member[] | null>(null);
  const cursor = useSignal<string | null>(null);
  const failure = useSignal<string | null>(null);

  const load = async (after: string | null) => {
    const tenant = session.tenant.value;
    if (!tenant) return;
    const query = `?workspace_id=${encodeURIComponent(workspace)}&limit=${PAGE_SIZE}${
      after ? `&cursor=${encodeURIComponent(after)}` : ''
    }`;
    try {
      const page = await api<{ members: Member[]; next_cursor: string | null }>(
        'GET',
        `${pathOf`/v1/tenants/${tenant}/segments/${segmentId}/members`}${query}`,
      );
      members.value = after ? [...(members.value ?? []), ...page.members] : page.members;
      cursor.value = page.next_cursor;
      failure.value = null;
    } catch (error) {
      failure.value = (error as Error).message;
    }
  };

  useSignalEffect(() => {
    session.tenant.value;
    void load(null);
  });

  return (
    <section aria-labelledby="members-title">
      <div class="page-head">
        <h2 id="members-title">Members</h2>
        <button type="button" class="quiet" onClick={() => load(null)}>
          Refresh members
        </button>
      </div>
      {failure.value && <p class="error">{failure.value}</p>}
      {members.value === null ? (
        <p class="loading">Loading the members…</p>
      ) : members.value.length === 0 ? (
        <p>No member yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="help">Identifiers masked as the API masks them.</caption>
            <thead>
              <tr>
                <th scope="col">Profile</th>
                <th scope="col">Email</th>
                <th scope="col">Phone</th>
                <th scope="col">Last seen</th>
              </tr>
            </thead>
            <tbody>
              {members.value.map((member) => (
                <tr key={member.profile_id}>
                  <td>
                    <code>{member.profile_id}</code>
                  </td>
                  <td>{member.email ?? '—'}</td>
                  <td>{member.phone ?? '—'}</td>
                  <td>{new Date(member.last_seen_at).toLocaleString()}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {cursor.value && (
        <button type="button" class="quiet" onClick={() => load(cursor.value)}>
          More members
        </button>
      )}
    </section>
  );
}
