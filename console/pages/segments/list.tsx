import { useSignal, useSignalEffect } from '@preact/signals';
import { canWrite, session } from '../../session.js';
import {
  listSegments,
  SEGMENT_STATUSES,
  type SegmentItem,
  type SegmentStatus,
  setStatus,
} from './data.js';

/** Member counts are live as of the last ingest batch; the list asks again this often. */
const LIST_REFRESH_MS = 3000;

function StatusCell({ segment, onChanged }: { segment: SegmentItem; onChanged: () => void }) {
  const failure = useSignal<string | null>(null);
  if (!canWrite.value) return <>{segment.status}</>;
  return (
    <>
      <select
        aria-label={`Status of ${segment.display_name}`}
        value={segment.status}
        onChange={async (event) => {
          const select = event.target as HTMLSelectElement;
          const tenant = session.tenant.value;
          if (!tenant) return;
          failure.value = null;
          try {
            await setStatus(
              tenant,
              segment.workspace_id,
              segment.segment_id,
              select.value as SegmentStatus,
            );
          } catch (error) {
            select.value = segment.status;
            failure.value = (error as Error).message;
          }
          onChanged();
        }}
      >
        {SEGMENT_STATUSES.map((status) => (
          <option key={status} value={status}>
            {status}
          </option>
        ))}
      </select>
      {failure.value && <p class="error">{failure.value}</p>}
    </>
  );
}

/** The workspace's segments with their member counts, refreshed while the page is open. */
export function SegmentList() {
  const segments = useSignal<SegmentItem[] | null>(null);
  const failure = useSignal<string | null>(null);
  const refreshes = useSignal(0);

  useSignalEffect(() => {
    const tenant = session.tenant.value;
    const workspace = session.workspace.value;
    refreshes.value;
    if (!tenant || !workspace) return;
    let stale = false;
    listSegments(tenant, workspace).then(
      (list) => {
        if (stale) return;
        segments.value = list;
        failure.value = null;
      },
      (error: Error) => {
        if (!stale) failure.value = error.message;
      },
    );
    const timer = setTimeout(() => {
      refreshes.value += 1;
    }, LIST_REFRESH_MS);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  });

  const refresh = () => {
    refreshes.value += 1;
  };
  return (
    <section aria-labelledby="segments-title">
      <div class="page-head">
        <h1 id="segments-title">Segments</h1>
        {canWrite.value && (
          <a class="button" href="#/segments/new">
            New segment
          </a>
        )}
      </div>
      {failure.value && <p class="error">The segments could not be loaded: {failure.value}</p>}
      {segments.value === null ? (
        <p class="loading">Loading the segments…</p>
      ) : segments.value.length === 0 ? (
        <p>No segment in this workspace yet.</p>
      ) : (
        <div class="table-wrap">
          <table>
            <caption class="help">Member counts as of the last ingested batch.</caption>
            <thead>
              <tr>
                <th scope="col">Segment</th>
                <th scope="col">Id</th>
                <th scope="col">Members</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {segments.value.map((segment) => (
                <tr key={segment.segment_id}>
                  <th scope="row">
                    <a href={`#/segments/${encodeURIComponent(segment.segment_id)}`}>
                      {segment.display_name}
                    </a>
                    {segment.evaluation_error && (
                      <p class="error">Not evaluated: {segment.evaluation_error}</p>
                    )}
                  </th>
                  <td>
                    <code>{segment.segment_id}</code>
                  </td>
                  <td class="number" data-testid={`members-${segment.segment_id}`}>
                    {segment.member_count ?? 0}
                  </td>
                  <td>
                    <StatusCell segment={segment} onChanged={refresh} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
