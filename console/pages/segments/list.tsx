import { useSignal } from '@preact/signals';
import { Table } from '../../components/table.js';
import { usePolled } from '../../hooks/use-polled.js';
import { canWrite } from '../../session.js';
import { listSegments, type SegmentItem } from './data.js';
import { StatusSelect } from './status-select.js';

/** Member counts are live as of the last ingest batch; the list asks again this often. */
const LIST_REFRESH_MS = 3000;

/** The workspace's segments with their member counts, refreshed while the page is open. */
export function SegmentList() {
  const segments = useSignal<SegmentItem[] | null>(null);
  const { failure, refresh } = usePolled(
    listSegments,
    (list) => {
      segments.value = list;
    },
    LIST_REFRESH_MS,
  );

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
        <Table
          caption="Member counts as of the last ingested batch."
          columns={['Segment', 'Id', 'Members', 'Status']}
        >
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
                <StatusSelect
                  segment={segment}
                  label={`Status of ${segment.display_name}`}
                  onChanged={refresh}
                />
              </td>
            </tr>
          ))}
        </Table>
      )}
    </section>
  );
}
