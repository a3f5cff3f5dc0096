import { eventFilterOf } from '../metrics/event-filter.js';
import type { Session } from '../store/session.js';
import { type Behaviour, definitionFieldsOf, describeBehaviour } from './behaviour.js';

/** The segment a behaviour is computed for (definitions.ts SegmentKey, by shape). */
interface SegmentKey {
  tenantId: string;
  workspaceId: string;
  segmentId: string;
}

/**
 * Gives a new segment the metrics its behaviours are computed as: a definition per behaviour in
 * the segment's workspace, shared with the segments already comparing it, backfilled by the next
 * pass of the ingest loop before the segment is first evaluated (docs/decisions.md, "Behaviour in
 * a rule").
 */
export async function computeBehavioursFor(
  session: Session,
  key: SegmentKey,
  behaviours: Behaviour[],
  now: string,
): Promise<void> {
  for (const behaviour of behaviours) {
    const fields = definitionFieldsOf(behaviour);
    await session.run('insert_behaviour_definition', {
      tenant_id: key.tenantId,
      workspace_id: key.workspaceId,
      metric_name: behaviour.metricName,
      event_name: behaviour.event,
      value_kind: fields.value_kind,
      value_path: behaviour.path,
      aggregation: fields.aggregation,
      window_days: behaviour.withinDays,
      display_name: describeBehaviour(behaviour),
      event_filter: eventFilterOf(behaviour.where),
      now,
    });
    await session.run('insert_segment_behaviour', {
      tenant_id: key.tenantId,
      workspace_id: key.workspaceId,
      segment_id: key.segmentId,
      metric_name: behaviour.metricName,
    });
  }
}

/**
 * Drops a deleted segment's hold on its behaviours; those no other segment compares go, with
 * every value computed for them.
 */
export async function releaseBehavioursOf(session: Session, key: SegmentKey): Promise<void> {
  const scope = { tenant_id: key.tenantId, workspace_id: key.workspaceId };
  await session.run('delete_segment_behaviours', { ...scope, segment_id: key.segmentId });
  const unused = await session.all<{ metric_name: string }>('unused_behaviour_metrics', scope);
  if (unused.length === 0) return;
  const released = { ...scope, names: JSON.stringify(unused.map((row) => row.metric_name)) };
  for (const statement of [
    'release_behaviour_definitions',
    'release_behaviour_contributions',
    'release_behaviour_strings',
    'release_behaviour_values',
  ])
    await session.run(statement, released);
}

/** Which of a rule's behaviours have complete values in the workspace, to be read as metrics. */
export async function backfilledBehaviours(
  session: Session,
  tenantId: string,
  workspaceId: string,
  behaviours: Behaviour[],
): Promise<Set<string>> {
  if (behaviours.length === 0) return new Set();
  const rows = await session.all<{ metric_name: string }>('backfilled_behaviour_metrics', {
    tenant_id: tenantId,
    workspace_id: workspaceId,
    names: JSON.stringify(behaviours.map((behaviour) => behaviour.metricName)),
  });
  return new Set(rows.map((row) => row.metric_name));
}
