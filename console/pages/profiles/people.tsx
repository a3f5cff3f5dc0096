import { useSignal, useSignalEffect } from '@preact/signals';
import { pathOf } from '../../api.js';
import { Alert } from '../../components/alert.js';
import { messageOf } from '../../components/field.js';
import { ShowMore } from '../../components/show-more.js';
import { Table } from '../../components/table.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { listSegments, type SegmentItem, workspaceMetrics } from '../segments/data.js';

/** A row of the customer table (`GET …/profiles/summary`), masked by the API (design §11). */
interface Person {
  profile_id: string;
  email: string | null;
  phone: string | null;
  last_seen_at: string;
  metrics: Record<string, number | string | string[] | null>;
  segment_ids: string[];
}

/** Metric columns shown before any is chosen: enough to tell people apart, not a wall. */
const FIRST_COLUMNS = 2;

function shown(value: number | string | string[] | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/**
 * The workspace's people, a page at a time in the order of their profile ids or by a count or
 * sum (those without it last), optionally the members of one segment, with the metric columns
 * the reader chooses; each opens its profile.
 */
export function People(props: { tenant: string; workspace: string }) {
  const segmentId = useSignal('');
  const segments = useSignal<SegmentItem[]>([]);
  const metricNames = useSignal<string[]>([]);
  /** The counts and sums, which the table can sort by. */
  const numberMetrics = useSignal<string[]>([]);
  /** `metric:desc`, `metric:asc`, or empty for the order of profile ids. */
  const order = useSignal('');
  const columns = useSignal<string[]>([]);
  const loadFailure = useSignal<string | null>(null);

  useSignalEffect(() => {
    Promise.all([
      listSegments(props.tenant, props.workspace),
      workspaceMetrics(props.tenant, props.workspace),
    ]).then(
      ([segmentList, metrics]) => {
        segments.value = segmentList;
        metricNames.value = metrics.map((metric) => metric.name);
        numberMetrics.value = metrics
          .filter((metric) => metric.shape === 'number')
          .map((metric) => metric.name);
        columns.value = metricNames.value.slice(0, FIRST_COLUMNS);
      },
      (error) => {
        loadFailure.value = messageOf(error);
      },
    );
  });

  const list = usePagedList<Person>('profiles', () => {
    const base = pathOf`/v1/tenants/${props.tenant}/workspaces/${props.workspace}/profiles/summary`;
    const query = new URLSearchParams();
    if (segmentId.value) query.set('segment_id', segmentId.value);
    const [metric, direction] = order.value.split(':');
    if (metric && direction) {
      query.set('sort_by', metric);
      query.set('order', direction);
    }
    const text = query.toString();
    return text ? `${base}?${text}` : base;
  });

  const toggle = (name: string, on: boolean) => {
    columns.value = on
      ? metricNames.value.filter((metric) => metric === name || columns.value.includes(metric))
      : columns.value.filter((metric) => metric !== name);
  };

  const rows = list.rows.value;
  return (
    <section aria-labelledby="people-title">
      <h2 id="people-title">People</h2>
      <Alert message={loadFailure.value ?? list.failure.value} />
      <div class="page-head">
        <label class="inline">
          Segment
          <select
            value={segmentId.value}
            onChange={(event) => {
              segmentId.value = (event.target as HTMLSelectElement).value;
            }}
          >
            <option value="">every profile</option>
            {segments.value.map((segment) => (
              <option key={segment.segment_id} value={segment.segment_id}>
                {segment.display_name} ({segment.segment_id})
              </option>
            ))}
          </select>
        </label>
        <label class="inline">
          Sort by
          <select
            value={order.value}
            onChange={(event) => {
              order.value = (event.target as HTMLSelectElement).value;
            }}
          >
            <option value="">profile id</option>
            {numberMetrics.value.flatMap((name) => [
              <option key={`${name}:desc`} value={`${name}:desc`}>
                {name}, highest first
              </option>,
              <option key={`${name}:asc`} value={`${name}:asc`}>
                {name}, lowest first
              </option>,
            ])}
          </select>
        </label>
      </div>
      {metricNames.value.length > 0 && (
        <fieldset class="columns">
          <legend>Metric columns</legend>
          {metricNames.value.map((name) => (
            <label class="inline" key={name}>
              <input
                type="checkbox"
                checked={columns.value.includes(name)}
                onChange={(event) => toggle(name, (event.target as HTMLInputElement).checked)}
              />
              {name}
            </label>
          ))}
        </fieldset>
      )}
      {rows === null ? (
        <p class="loading">Loading the people…</p>
      ) : rows.length === 0 ? (
        <p>No one{segmentId.value ? ' in this segment' : ''} yet.</p>
      ) : (
        <Table
          caption="Identifiers masked as the customer table masks them."
          columns={['Profile', 'Email', 'Phone', 'Last seen', ...columns.value, 'Segments']}
        >
          {rows.map((person) => (
            <tr key={person.profile_id}>
              <th scope="row">
                <a href={`#/profiles/${encodeURIComponent(person.profile_id)}`}>
                  {person.profile_id}
                </a>
              </th>
              <td>{person.email ?? '—'}</td>
              <td>{person.phone ?? '—'}</td>
              <td title={person.last_seen_at}>{new Date(person.last_seen_at).toLocaleString()}</td>
              {columns.value.map((name) => (
                <td key={name}>{shown(person.metrics[name])}</td>
              ))}
              <td>{person.segment_ids.join(', ') || '—'}</td>
            </tr>
          ))}
        </Table>
      )}
      <ShowMore list={list} what="people" />
    </section>
  );
}
