import { useSignal, useSignalEffect } from '@preact/signals';
import { api, pathOf } from '../../api.js';
import { navigate } from '../../router.js';
import { canWrite, session } from '../../session.js';
import {
  SEGMENT_STATUSES,
  type SegmentItem,
  type SegmentStatus,
  setStatus,
  startingPredicate,
} from './data.js';
import { MemberChart, type MemberCountPoint } from './member-chart.js';
import { describePredicate } from './rule.js';
import { SegmentDeliveries } from './segment-deliveries.js';
import { SegmentMembers } from './segment-members.js';

/** The count and chart are asked again this often while the page is open. */
const REFRESH_MS = 3000;

interface MemberCounts {
  member_count: number;
  points: MemberCountPoint[];
}

function Definition({ segment, onChanged }: { segment: SegmentItem; onChanged: () => void }) {
  const failure = useSignal<string | null>(null);
  const automations = [
    segment.automations.on_enter && 'when a profile enters',
    segment.automations.on_exit && 'when a profile leaves',
    segment.automations.on_backfill && 'for profiles matching when it became active',
  ].filter(Boolean);
  return (
    <dl class="facts">
      <dt>Rule</dt>
      <dd>
        <pre class="rule-text">{describePredicate(segment.predicate).join('\n')}</pre>
      </dd>
      <dt>Status</dt>
      <dd>
        {canWrite.value ? (
          <select
            aria-label="Status"
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
        ) : (
          segment.status
        )}
        {failure.value && <p class="error">{failure.value}</p>}
        {segment.evaluation_error && <p class="error">Not evaluated: {segment.evaluation_error}</p>}
      </dd>
      <dt>Webhooks</dt>
      <dd>{automations.length > 0 ? automations.join('; ') : 'none'}</dd>
      <dt>Created</dt>
      <dd>{new Date(segment.created_at).toLocaleString()}</dd>
      {canWrite.value && (
        <>
          <dt>Change</dt>
          <dd>
            <button
              type="button"
              class="quiet"
              onClick={() => {
                startingPredicate.value = segment.predicate;
                navigate('/segments/new');
              }}
            >
              New segment from this rule
            </button>
            <p class="help">
              A saved rule does not change (its members and webhooks follow it): build the new one,
              then archive this one.
            </p>
          </dd>
        </>
      )}
    </dl>
  );
}

/** One segment: its rule, status, member count over time, members and webhook deliveries. */
export function SegmentPage({ segmentId }: { segmentId: string }) {
  const segment = useSignal<SegmentItem | null>(null);
  const counts = useSignal<MemberCounts | null>(null);
  const failure = useSignal<string | null>(null);
  const refreshes = useSignal(0);

  useSignalEffect(() => {
    const tenant = session.tenant.value;
    const workspace = session.workspace.value;
    refreshes.value;
    if (!tenant || !workspace) return;
    let stale = false;
    const query = `?workspace_id=${encodeURIComponent(workspace)}`;
    Promise.all([
      api<SegmentItem>(
        'GET',
        `${pathOf`/v1/tenants/${tenant}/segments/${segmentId}/definition`}${query}`,
      ),
      api<MemberCounts>(
        'GET',
        `${pathOf`/v1/tenants/${tenant}/segments/${segmentId}/member-counts`}${query}`,
      ),
    ]).then(
      ([definition, memberCounts]) => {
        if (stale) return;
        segment.value = definition;
        // A new array only when the numbers changed, so the chart is not redrawn for nothing.
        const before = counts.value;
        if (
          !before ||
          before.member_count !== memberCounts.member_count ||
          before.points.length !== memberCounts.points.length ||
          before.points.at(-1)?.at !== memberCounts.points.at(-1)?.at
        )
          counts.value = memberCounts;
        failure.value = null;
      },
      (error: Error) => {
        if (!stale) failure.value = error.message;
      },
    );
    const timer = setTimeout(() => {
      refreshes.value += 1;
    }, REFRESH_MS);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  });

  const shown = segment.value;
  return (
    <section aria-labelledby="segment-title">
      <p>
        <a href="#/segments">All segments</a>
      </p>
      {failure.value && <p class="error">{failure.value}</p>}
      {!shown ? (
        !failure.value && <p class="loading">Loading the segment…</p>
      ) : (
        <>
          <h1 id="segment-title">{shown.display_name}</h1>
          <p>
            <code>{shown.segment_id}</code> in {shown.workspace_id}:{' '}
            <strong data-testid="member-count">{counts.value?.member_count ?? '…'}</strong> members
          </p>
          <Definition
            segment={shown}
            onChanged={() => {
              refreshes.value += 1;
            }}
          />
          <h2>Members over time</h2>
          {counts.value && <MemberChart points={counts.value.points} />}
          <SegmentMembers segmentId={shown.segment_id} workspace={shown.workspace_id} />
          <SegmentDeliveries segmentId={shown.segment_id} workspace={shown.workspace_id} />
        </>
      )}
    </section>
  );
}
