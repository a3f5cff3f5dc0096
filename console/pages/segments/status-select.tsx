import { useSignal } from '@preact/signals';
import { messageOf, Options } from '../../components/field.js';
import { canWrite, session } from '../../session.js';
import { SEGMENT_STATUSES, type SegmentItem, type SegmentStatus, setStatus } from './data.js';

/**
 * A segment's status, changed in place by a token that may write (shown as text otherwise). A
 * refused change puts the select back and says why; `onChanged` reads the segment again either way.
 */
export function StatusSelect(props: {
  segment: SegmentItem;
  label: string;
  onChanged: () => void;
}) {
  const failure = useSignal<string | null>(null);
  const { segment } = props;
  if (!canWrite.value) return <>{segment.status}</>;
  return (
    <>
      <select
        aria-label={props.label}
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
            failure.value = messageOf(error);
          }
          props.onChanged();
        }}
      >
        <Options values={SEGMENT_STATUSES} />
      </select>
      {failure.value && <p class="error">{failure.value}</p>}
    </>
  );
}
