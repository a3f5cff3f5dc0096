import { useSignal } from '@preact/signals';
import { useEffect, useRef } from 'preact/hooks';
import { api, pathOf } from '../../api.js';
import { messageOf } from '../../components/field.js';

interface ErasedCounts {
  profiles: number;
  identifiers: number;
  metrics: number;
  segment_memberships: number;
  history_entries: number;
  events: number;
}

const COUNT_LABELS: [keyof ErasedCounts, string][] = [
  ['profiles', 'Profiles'],
  ['identifiers', 'Identifiers'],
  ['metrics', 'Metric values'],
  ['segment_memberships', 'Segment memberships'],
  ['history_entries', 'History entries'],
  ['events', 'Events'],
];

function Counts(props: { counts: ErasedCounts; label: string }) {
  return (
    <dl class="facts" aria-label={props.label}>
      {COUNT_LABELS.map(([key, label]) => [
        <dt key={`${key}-t`}>{label}</dt>,
        <dd key={`${key}-d`}>{props.counts[key]}</dd>,
      ])}
    </dl>
  );
}

/**
 * Erasure in two steps: a dry run says what would go, then a confirmation that names the
 * profile erases it (the API's `?dry_run=true`, then the real call).
 */
export function EraseProfile(props: {
  tenant: string;
  workspace: string;
  profileId: string;
  onErased: (counts: ErasedCounts) => void;
}) {
  const planned = useSignal<ErasedCounts | null>(null);
  const failure = useSignal<string | null>(null);
  const busy = useSignal(false);
  // The dry-run button goes away once clicked: keyboard focus moves to what it found.
  const confirmation = useRef<HTMLDivElement>(null);
  const shown = planned.value !== null;
  useEffect(() => {
    if (shown) confirmation.current?.focus();
  }, [shown]);
  const path = pathOf`/v1/tenants/${props.tenant}/workspaces/${props.workspace}/profiles/${props.profileId}`;

  const call = async (dryRun: boolean) => {
    busy.value = true;
    failure.value = null;
    try {
      const answer = await api<{ erased: ErasedCounts }>('DELETE', `${path}?dry_run=${dryRun}`);
      if (dryRun) planned.value = answer.erased;
      else props.onErased(answer.erased);
    } catch (error) {
      failure.value = messageOf(error);
    } finally {
      busy.value = false;
    }
  };

  return (
    <section aria-labelledby="erase-title" class="danger-zone">
      <h2 id="erase-title">Erase</h2>
      <p class="help">
        Erasing removes the profile, its identifiers, metrics, memberships, history and events. It
        cannot be undone.
      </p>
      {planned.value === null ? (
        <button type="button" disabled={busy.value} onClick={() => call(true)}>
          Dry run: count what would be erased
        </button>
      ) : (
        <div class="stack" ref={confirmation} tabIndex={-1}>
          <Counts counts={planned.value} label="What erasing would remove" />
          <p>
            Erase profile <code>{props.profileId}</code> and everything above? This cannot be
            undone.
          </p>
          <div class="actions">
            <button type="button" class="danger" disabled={busy.value} onClick={() => call(false)}>
              Erase profile {props.profileId}
            </button>
            <button
              type="button"
              class="quiet"
              onClick={() => {
                planned.value = null;
              }}
            >
              Cancel
            </button>
          </div>
        </div>
      )}
      {failure.value && (
        <p role="alert" class="error">
          {failure.value}
        </p>
      )}
    </section>
  );
}

export type { ErasedCounts };
export { Counts };
