import { useSignal } from '@preact/signals';
import { api, pathOf } from '../../api.js';
import { ConfirmDialog } from '../../components/confirm-dialog.js';
import { messageOf } from '../../components/field.js';
import { usePolled } from '../../hooks/use-polled.js';
import { navigate } from '../../router.js';
import { canWrite } from '../../session.js';
import { currentScope } from '../scope.js';
import { Deliveries } from '../webhooks/deliveries.js';
import { type SegmentItem, startingPredicate } from './data.js';
import { MemberChart, type MemberCountPoint } from './member-chart.js';
import { describePredicate } from './rule.js';
import { SegmentMembers } from './segment-members.js';
import { StatusSelect } from './status-select.js';

/** The count and chart are asked again this often while the page is open. */
const REFRESH_MS = 3000;

interface MemberCounts {
  member_count: number;
  members_without_consent: number;
  points: MemberCountPoint[];
}

/**
 * Deleting a segment, once confirmed: it names what goes with it (members, history, webhooks
 * not yet delivered) and the way to keep them (archiving).
 */
function DeleteSegment({ segment, members }: { segment: SegmentItem; members: number | null }) {
  const asking = useSignal(false);
  const deleting = useSignal(false);
  const failure = useSignal<string | null>(null);
  const remove = async () => {
    const scope = currentScope();
    if (!scope) return;
    deleting.value = true;
    try {
      await api(
        'DELETE',
        `${pathOf`/v1/tenants/${scope.tenant}/segments/${segment.segment_id}`}?workspace_id=${encodeURIComponent(segment.workspace_id)}`,
      );
      navigate('/segments');
    } catch (error) {
      failure.value = messageOf(error);
      deleting.value = false;
    }
  };
  return (
    <>
      <button
        type="button"
        class="quiet"
        onClick={() => {
          failure.value = null;
          asking.value = true;
        }}
      >
        Delete segment
      </button>
      {asking.value && (
        <ConfirmDialog
          title={`Delete segment ${segment.display_name}?`}
          confirmLabel={`Delete segment ${segment.segment_id}`}
          busy={deleting.value}
          failure={failure.value}
          onConfirm={remove}
          onClose={() => {
            asking.value = false;
          }}
        >
          <p>
            Its {members ?? 'current'} members, its history of entries and exits and its webhooks
            not yet delivered are deleted with it. Archiving it instead keeps them and stops its
            evaluation.
          </p>
        </ConfirmDialog>
      )}
    </>
  );
}

function Definition({
  segment,
  members,
  onChanged,
}: {
  segment: SegmentItem;
  members: number | null;
  onChanged: () => void;
}) {
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
        <StatusSelect segment={segment} label="Status" onChanged={onChanged} />
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
              Copy as a new segment
            </button>
            <p class="help">
              A saved rule does not change (its members and webhooks follow it): build the new one,
              then archive this one.
            </p>
            <DeleteSegment segment={segment} members={members} />
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
  const { failure, refresh } = usePolled(
    (tenant, workspace) => {
      const query = `?workspace_id=${encodeURIComponent(workspace)}`;
      return Promise.all([
        api<SegmentItem>(
          'GET',
          `${pathOf`/v1/tenants/${tenant}/segments/${segmentId}/definition`}${query}`,
        ),
        api<MemberCounts>(
          'GET',
          `${pathOf`/v1/tenants/${tenant}/segments/${segmentId}/member-counts`}${query}`,
        ),
      ]);
    },
    ([definition, memberCounts]) => {
      segment.value = definition;
      // A new array only when the numbers changed, so the chart is not redrawn for nothing.
      const before = counts.value;
      if (
        !before ||
        before.member_count !== memberCounts.member_count ||
        before.members_without_consent !== memberCounts.members_without_consent ||
        before.points.length !== memberCounts.points.length ||
        before.points.at(-1)?.at !== memberCounts.points.at(-1)?.at
      )
        counts.value = memberCounts;
    },
    REFRESH_MS,
  );

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
          {shown.required_consent.length > 0 && (
            <p>
              Webhooks need consent to {shown.required_consent.join(', ')}:{' '}
              <strong data-testid="members-without-consent">
                {counts.value?.members_without_consent ?? '…'}
              </strong>{' '}
              members lack it, and their deliveries are withheld.
            </p>
          )}
          <Definition
            segment={shown}
            members={counts.value?.member_count ?? null}
            onChanged={refresh}
          />
          <h2>Members over time</h2>
          {counts.value && <MemberChart points={counts.value.points} />}
          <SegmentMembers segmentId={shown.segment_id} workspace={shown.workspace_id} />
          <Deliveries segmentId={shown.segment_id} workspace={shown.workspace_id} />
        </>
      )}
    </section>
  );
}
