import { useSignal, useSignalEffect } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import { ApiError, api, pathOf } from '../api.js';
import { readEventStream } from '../event-stream.js';
import { session } from '../session.js';

/** One line of the live view, as `GET …/events` and its stream answer it. */
interface LiveEvent {
  event_id: string | null;
  name: string | null;
  occured_at: string | null;
  received_at: string | null;
  source: LiveEventSource | null;
  outcome: 'stored' | 'duplicate' | 'rejected' | 'quarantined';
  reason: string | null;
  profile_id: string | null;
  /** The profile's first email, masked by the API. */
  email: string | null;
  properties: Record<string, unknown> | null;
}

const OUTCOMES = ['stored', 'duplicate', 'rejected', 'quarantined'] as const;
type LiveEventSource = 'browser' | 'server' | 'segment_api';
/** Each source as people name it; the API's value is what the filter sends. */
const SOURCE_LABELS = new Map<LiveEventSource, string>([
  ['browser', 'browser'],
  ['server', 'server'],
  ['segment_api', 'Segment API'],
]);
const sourceLabel = (source: LiveEventSource | null) =>
  source === null ? '—' : (SOURCE_LABELS.get(source) ?? source);
/** Lines kept on screen; older ones are a page of the list route away. */
const SHOWN = 500;
const RECONNECT_MS = 3000;

interface Filters {
  name: string;
  profileId: string;
  outcome: string;
  source: string;
}

function query(filters: Filters, extra: Record<string, string> = {}): string {
  const params = new URLSearchParams(extra);
  if (filters.name) params.set('name', filters.name);
  if (filters.profileId) params.set('profile_id', filters.profileId);
  if (filters.outcome) params.set('outcome', filters.outcome);
  if (filters.source) params.set('source', filters.source);
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** A time in the reader's zone, with the UTC instant on hover (and for a screen reader's `datetime`). */
function Time({ iso }: { iso: string | null }) {
  if (iso === null) return <>—</>;
  return (
    <time dateTime={iso} title={`${iso} (UTC)`}>
      {new Date(iso).toLocaleString()}
    </time>
  );
}

/** A stable key for a line: lines without an id (unparsable) get their position. */
const keyOf = (line: LiveEvent, index: number) =>
  `${line.event_id ?? 'line'}-${line.received_at ?? ''}-${line.outcome}-${index}`;

/**
 * The events of the workspace as they are ingested, newest first, each with its outcome. The
 * list is read once, then the live feed adds each committed batch's lines on top; choosing a
 * line opens its details beside the list, and the feed goes on.
 */
export function LiveEvents() {
  const lines = useSignal<LiveEvent[]>([]);
  const chosen = useSignal<LiveEvent | null>(null);
  const filters = useSignal<Filters>({ name: '', profileId: '', outcome: '', source: '' });
  const status = useSignal('connecting…');

  useSignalEffect(() => {
    const tenant = session.tenant.value;
    const workspace = session.workspace.value;
    const current = filters.value;
    if (!tenant || !workspace) return;
    const base = pathOf`/v1/tenants/${tenant}/workspaces/${workspace}/events`;
    const abort = new AbortController();
    lines.value = [];
    chosen.value = null;
    const follow = async () => {
      const page = await api<{ items: LiveEvent[]; stream_cursor: string | null }>(
        'GET',
        `${base}${query(current, { limit: '100' })}`,
      );
      if (abort.signal.aborted) return;
      lines.value = page.items;
      // The feed starts right after the page: no line between the two is lost.
      let lastId: string | null = page.stream_cursor;
      // Set by the server's last message when the token may no longer read the feed.
      const refused: { message?: string } = {};
      while (!abort.signal.aborted) {
        try {
          status.value = 'live';
          lastId = await readEventStream(
            `${base}/stream${query(current)}`,
            lastId,
            abort.signal,
            (message) => {
              if (message.event === 'error') {
                refused.message = (
                  JSON.parse(message.data) as { error: { message: string } }
                ).error.message;
                return;
              }
              if (message.event !== 'line') return;
              const line = JSON.parse(message.data) as LiveEvent;
              lines.value = [line, ...lines.value].slice(0, SHOWN);
            },
          );
        } catch (error) {
          if (abort.signal.aborted) return;
          status.value = `disconnected (${(error as Error).message}); reconnecting`;
        }
        // A refusal does not heal by reconnecting: said, and the feed stops.
        if (refused.message !== undefined) {
          status.value = `ended: ${refused.message}`;
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      }
    };
    follow().catch((error: Error) => {
      if (!abort.signal.aborted) status.value = `could not read the events: ${error.message}`;
    });
    return () => abort.abort();
  });

  // Opening a line's details takes the reader to them, once, not at each line the feed adds.
  const detailsHeading = useRef<HTMLHeadingElement>(null);
  const shownDetails = chosen.value;
  useEffect(() => {
    if (shownDetails) detailsHeading.current?.focus();
  }, [shownDetails]);

  // A customer's email or phone is looked up (the value goes in the lookup request only, never in
  // the address), and the list then shows their profile's events.
  const customer = useSignal<string | null>(null);
  const findCustomer = async (event: Event) => {
    const value = (event.target as HTMLInputElement).value.trim();
    const tenant = session.tenant.value;
    const workspace = session.workspace.value;
    if (!tenant || !workspace) return;
    if (!value) {
      customer.value = null;
      filters.value = { ...filters.value, profileId: '' };
      return;
    }
    const type = value.includes('@') ? 'email' : 'phone';
    try {
      const found = await api<{ profile_id: string }>(
        'GET',
        `${pathOf`/v1/tenants/${tenant}/workspaces/${workspace}/profiles/lookup`}?${new URLSearchParams({ [type]: value })}`,
      );
      customer.value = `Showing the events of that ${type}'s profile, ${found.profile_id}.`;
      filters.value = { ...filters.value, profileId: found.profile_id };
    } catch (error) {
      customer.value =
        error instanceof ApiError && error.status === 404
          ? `No profile in ${workspace} has that ${type}.`
          : `The ${type} could not be looked up: ${(error as Error).message}`;
    }
  };

  const setFilter = (key: keyof Filters) => (event: Event) => {
    filters.value = { ...filters.value, [key]: (event.target as HTMLInputElement).value.trim() };
  };

  return (
    <section aria-labelledby="live-title" class="live">
      <h1 id="live-title">Live events</h1>
      <form class="filters" onSubmit={(event) => event.preventDefault()}>
        <label>
          Event name
          <input type="search" onChange={setFilter('name')} />
        </label>
        <label>
          Profile id
          <input type="search" onChange={setFilter('profileId')} />
        </label>
        <label>
          Customer's email or phone
          <input type="search" autocomplete="off" onChange={findCustomer} />
        </label>
        <label>
          Outcome
          <select onChange={setFilter('outcome')}>
            <option value="">any</option>
            {OUTCOMES.map((outcome) => (
              <option key={outcome} value={outcome}>
                {outcome}
              </option>
            ))}
          </select>
        </label>
        <label>
          Source
          <select onChange={setFilter('source')}>
            <option value="">any</option>
            {[...SOURCE_LABELS].map(([source, label]) => (
              <option key={source} value={source}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <p class="help" role="status">
          Feed: {status.value}
          {customer.value ? ` ${customer.value}` : ''}
        </p>
      </form>
      <div class="split">
        <div class="table-wrap">
          <table>
            <caption class="visually-hidden">Events, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Received</th>
                <th scope="col">Event</th>
                <th scope="col">Source</th>
                <th scope="col">Outcome</th>
                <th scope="col">Customer</th>
              </tr>
            </thead>
            <tbody>
              {lines.value.map((line, index) => (
                <tr key={keyOf(line, index)} class={chosen.value === line ? 'selected' : undefined}>
                  <td>
                    <Time iso={line.received_at} />
                  </td>
                  <td>
                    <button type="button" class="link" onClick={() => (chosen.value = line)}>
                      {line.name ?? '(unreadable line)'}
                    </button>
                  </td>
                  <td>{sourceLabel(line.source)}</td>
                  <td>
                    <span class={`outcome outcome-${line.outcome}`}>{line.outcome}</span>
                    {line.reason && <span class="help"> {line.reason}</span>}
                  </td>
                  <td>
                    {line.email && <span class="customer">{line.email} </span>}
                    {line.profile_id ? (
                      <a href={`#/profiles/${line.profile_id}`}>{line.profile_id}</a>
                    ) : (
                      '—'
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {lines.value.length === 0 && <p>No events yet in this workspace with these filters.</p>}
        </div>
        {chosen.value && (
          <aside class="details" aria-labelledby="details-title">
            <h2 id="details-title" tabIndex={-1} ref={detailsHeading}>
              {chosen.value.name ?? 'Unreadable line'}
            </h2>
            <dl class="facts">
              <dt>Event id</dt>
              <dd>
                <code>{chosen.value.event_id ?? '—'}</code>
              </dd>
              <dt>Occured at</dt>
              <dd>
                <Time iso={chosen.value.occured_at} />
              </dd>
              <dt>Received at</dt>
              <dd>
                <Time iso={chosen.value.received_at} />
              </dd>
              <dt>Source</dt>
              <dd>{sourceLabel(chosen.value.source)}</dd>
              <dt>Outcome</dt>
              <dd>
                {chosen.value.outcome}
                {chosen.value.reason ? `: ${chosen.value.reason}` : ''}
              </dd>
            </dl>
            <h3>Properties</h3>
            <pre class="json">
              {chosen.value.properties
                ? JSON.stringify(chosen.value.properties, null, 2)
                : 'not kept for lines that were not stored'}
            </pre>
            <button type="button" class="quiet" onClick={() => (chosen.value = null)}>
              Close details
            </button>
          </aside>
        )}
      </div>
    </section>
  );
}
