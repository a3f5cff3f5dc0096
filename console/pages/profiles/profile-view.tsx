import { useSignal, useSignalEffect } from '@preact/signals';
import { ApiError, api, pathOf } from '../../api.js';
import { Alert } from '../../components/alert.js';
import { messageOf } from '../../components/field.js';
import { ShowMore } from '../../components/show-more.js';
import { Table } from '../../components/table.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { canWrite } from '../../session.js';
import { Counts, type ErasedCounts, EraseProfile } from './erase.js';

interface ProfileView {
  profile_id: string;
  created_at: string;
  last_seen_at: string;
  merged_into: string | null;
  /** `value` only for the tenant's plaintext types; every other type is masked. */
  identifiers: {
    type: string;
    tier: string;
    value: string | null;
    masked_value: string;
    key: string;
  }[];
  metrics: Record<string, number | string | string[] | null>;
  segments: { segment_id: string; entered_at: string }[];
  merged_profile_ids: string[];
  /** Each consent category's newest choice; others take the workspace's default. */
  consent: { category: string; granted: boolean; chosen_at: string; source: string }[];
}

interface HistoryEntry {
  at: string;
  kind: 'event' | 'merge' | 'segment_enter' | 'segment_exit';
  event_name?: string;
  /** An event's properties, emails masked by the API. */
  properties?: Record<string, unknown>;
  merged_profile_id?: string;
  segment_id?: string;
}

function metricText(value: ProfileView['metrics'][string]): string {
  if (value === null) return 'none';
  return Array.isArray(value) ? value.join(', ') : String(value);
}

function historyText(entry: HistoryEntry): string {
  switch (entry.kind) {
    case 'event':
      return `event ${entry.event_name ?? ''}`;
    case 'merge':
      return `merged ${entry.merged_profile_id ?? ''} into this profile`;
    case 'segment_enter':
      return `entered segment ${entry.segment_id ?? ''}`;
    case 'segment_exit':
      return `left segment ${entry.segment_id ?? ''}`;
  }
}

/** The profile's timeline, newest first, a page at a time. */
function ProfileHistory({ path }: { path: string }) {
  const list = usePagedList<HistoryEntry>('entries', () => path);
  return (
    <>
      <Alert message={list.failure.value} />
      <Table columns={['When', 'What']}>
        {(list.rows.value ?? []).map((entry, index) => (
          // History entries have no id of their own; pages are only added under the rows shown.
          <tr key={index}>
            <td>
              <time dateTime={entry.at} title={`${entry.at} (UTC)`}>
                {new Date(entry.at).toLocaleString()}
              </time>
            </td>
            <td>
              {entry.properties ? (
                <details>
                  <summary>{historyText(entry)}</summary>
                  <pre class="json">{JSON.stringify(entry.properties, null, 2)}</pre>
                </details>
              ) : (
                historyText(entry)
              )}
            </td>
          </tr>
        ))}
      </Table>
      <ShowMore list={list} what="history" />
    </>
  );
}

/** One profile as the API shows it: identifiers masked per type, as the API masks them. */
export function ProfilePage(props: { tenant: string; workspace: string; profileId: string }) {
  const profile = useSignal<ProfileView | null>(null);
  const state = useSignal<'loading' | 'shown' | 'missing' | 'failed' | 'erased'>('loading');
  const failure = useSignal<string | null>(null);
  const erased = useSignal<ErasedCounts | null>(null);
  const base = pathOf`/v1/tenants/${props.tenant}/workspaces/${props.workspace}/profiles/${props.profileId}`;

  useSignalEffect(() => {
    api<ProfileView>('GET', base).then(
      (view) => {
        profile.value = view;
        state.value = 'shown';
      },
      (error) => {
        state.value = error instanceof ApiError && error.status === 404 ? 'missing' : 'failed';
        failure.value = messageOf(error);
      },
    );
  });

  const title = (
    <h1 id="profile-title">
      Profile <code>{props.profileId}</code>
    </h1>
  );
  if (state.value === 'erased')
    return (
      <section aria-labelledby="profile-title">
        {title}
        <p role="status">This profile was erased: it is gone.</p>
        {erased.value && <Counts counts={erased.value} label="What was erased" />}
        <p>
          <a href="#/profiles">Find another profile</a>
        </p>
      </section>
    );
  const view = profile.value;
  if (state.value !== 'shown' || !view)
    return (
      <section aria-labelledby="profile-title">
        {title}
        {state.value === 'loading' && <p class="loading">Loading…</p>}
        {state.value === 'missing' && <p role="status">No such profile in {props.workspace}.</p>}
        {state.value === 'failed' && (
          <p role="alert" class="error">
            {failure.value}
          </p>
        )}
        <p>
          <a href="#/profiles">Find another profile</a>
        </p>
      </section>
    );

  const metrics = Object.entries(view.metrics);
  return (
    <section aria-labelledby="profile-title" class="stack">
      {title}
      {view.merged_into && (
        <p class="help">
          The profile asked for was merged; this is the profile it went into,{' '}
          <code>{view.profile_id}</code>.
        </p>
      )}
      <dl class="facts">
        <dt>First seen</dt>
        <dd>{view.created_at}</dd>
        <dt>Last seen</dt>
        <dd>{view.last_seen_at}</dd>
      </dl>

      <h2>Identifiers</h2>
      <Table columns={['Type', 'Tier', 'Value']}>
        {view.identifiers.map((identifier) => (
          <tr key={identifier.key}>
            <td>{identifier.type}</td>
            <td>{identifier.tier}</td>
            <td>{identifier.value ?? identifier.masked_value}</td>
          </tr>
        ))}
      </Table>

      <h2>Metrics</h2>
      {metrics.length === 0 ? (
        <p>No metric values.</p>
      ) : (
        <dl class="facts">
          {metrics.map(([name, value]) => [
            <dt key={`${name}-t`}>{name}</dt>,
            <dd key={`${name}-d`}>{metricText(value)}</dd>,
          ])}
        </dl>
      )}

      <h2>Segments</h2>
      {view.segments.length === 0 ? (
        <p>In no segment.</p>
      ) : (
        <ul>
          {view.segments.map((segment) => (
            <li key={segment.segment_id}>
              <a href={`#/segments/${encodeURIComponent(segment.segment_id)}`}>
                {segment.segment_id}
              </a>{' '}
              since {segment.entered_at}
            </li>
          ))}
        </ul>
      )}

      <h2>Consent</h2>
      {view.consent.length === 0 ? (
        <p>No choice recorded: the workspace's default applies to every category.</p>
      ) : (
        <ul aria-label="Consent choices">
          {view.consent.map((choice) => (
            <li key={choice.category}>
              {choice.category}: {choice.granted ? 'granted' : 'denied'} (
              <time dateTime={choice.chosen_at} title={`${choice.chosen_at} (UTC)`}>
                {new Date(choice.chosen_at).toLocaleString()}
              </time>
              , {choice.source})
            </li>
          ))}
        </ul>
      )}

      <h2>Merged profiles</h2>
      {view.merged_profile_ids.length === 0 ? (
        <p>None merged into this one.</p>
      ) : (
        <ul>
          {view.merged_profile_ids.map((id) => (
            <li key={id}>
              <code>{id}</code>
            </li>
          ))}
        </ul>
      )}

      <h2>History</h2>
      <ProfileHistory path={`${base}/history`} />

      {canWrite.value && (
        <EraseProfile
          tenant={props.tenant}
          workspace={props.workspace}
          profileId={view.profile_id}
          onErased={(counts) => {
            erased.value = counts;
            state.value = 'erased';
          }}
        />
      )}
    </section>
  );
}
