import { ValidationError } from '../errors.js';
import { metricShapes } from '../metrics/shapes.js';
import type { Session } from '../store/session.js';
import { sql } from '../store/sql-files.js';
import { compileSegmentSet, fillSlots, MAX_SEGMENTS_PER_MASK } from './compile.js';
import { type MetricShape, type Predicate, parsePredicate } from './predicate.js';

interface StoredSegment {
  tenant_id: string;
  workspace_id: string;
  segment_id: string;
  predicate: string;
}

export interface EvaluationOptions {
  now: string;
  /** Whether changes go to the webhook outbox: only when a webhook URL is configured. */
  announce: boolean;
}

/** Segments grouped by workspace, in groups small enough for one membership mask. */
function byWorkspace(segments: StoredSegment[]): StoredSegment[][] {
  const groups = new Map<string, StoredSegment[]>();
  for (const segment of segments) {
    const scope = `${segment.tenant_id}\0${segment.workspace_id}`;
    groups.set(scope, [...(groups.get(scope) ?? []), segment]);
  }
  return [...groups.values()].flatMap((group) =>
    Array.from({ length: Math.ceil(group.length / MAX_SEGMENTS_PER_MASK) }, (_, index) =>
      group.slice(index * MAX_SEGMENTS_PER_MASK, (index + 1) * MAX_SEGMENTS_PER_MASK),
    ),
  );
}

function parsed(segment: StoredSegment, shapes: Map<string, MetricShape>): Predicate | null {
  try {
    return parsePredicate(JSON.parse(segment.predicate), shapes);
  } catch (error) {
    if (error instanceof ValidationError) return null;
    throw error;
  }
}

/**
 * The segments of one workspace with their predicates, checked against the live definitions'
 * shapes, then, for a metric whose definitions were all deleted, the kind of the values it left.
 * A segment that still does not compile (its metric left nothing) is left out: its membership
 * stays as it is, and ingest goes on.
 */
async function compilable(
  session: Session,
  segments: StoredSegment[],
): Promise<{ segment: StoredSegment; predicate: Predicate }[]> {
  const { tenant_id: tenantId, workspace_id: workspaceId } = segments[0] as StoredSegment;
  const shapes = await metricShapes(session, tenantId, workspaceId);
  let storedShapesAdded = false;
  const result: { segment: StoredSegment; predicate: Predicate }[] = [];
  for (const segment of segments) {
    let predicate = parsed(segment, shapes);
    if (!predicate && !storedShapesAdded) {
      const stored = await session.all<{ metric_name: string; shape: MetricShape }>(
        'segments_stored_metric_shapes',
        { tenant_id: tenantId },
      );
      for (const row of stored) {
        if (!shapes.has(row.metric_name)) shapes.set(row.metric_name, row.shape);
      }
      storedShapesAdded = true;
      predicate = parsed(segment, shapes);
    }
    if (predicate) result.push({ segment, predicate });
  }
  return result;
}

/**
 * Evaluates one workspace's segments over a scope of its profiles and applies the difference:
 * members, `segment_history` and, when announced, the webhook outbox, all in the caller's
 * transaction (design §13–§14).
 */
async function evaluateWorkspace(
  session: Session,
  segments: StoredSegment[],
  scope: 'touched' | 'workspace',
  options: EvaluationOptions,
): Promise<void> {
  const first = segments[0] as StoredSegment;
  const where = { tenant_id: first.tenant_id, workspace_id: first.workspace_id };
  const evaluated = await compilable(session, segments);
  if (scope === 'workspace') {
    // Marked even when left out, so a segment that does not compile is not retried every pass.
    await session.run('segments_mark_evaluated', {
      ...where,
      now: options.now,
      segment_ids: JSON.stringify(segments.map((segment) => segment.segment_id)),
    });
  }
  if (evaluated.length === 0) return;
  const compiled = compileSegmentSet(evaluated);
  await session.run('segments_create_evaluation_tables');
  if (scope === 'touched') await session.run('segments_scope_touched', where);
  await session.run('segments_choose', {
    ...where,
    backfill: scope === 'workspace',
    segment_ids: JSON.stringify(evaluated.map(({ segment }) => segment.segment_id)),
  });
  await session.runText(
    fillSlots(sql('segments_match'), {
      columns: compiled.columns,
      mask: compiled.mask,
    }),
    { ...where, whole_workspace: scope === 'workspace', ...compiled.params },
  );
  await session.run('segments_current', { ...where, whole_workspace: scope === 'workspace' });
  await session.run('segments_changes');
  await session.run('segments_apply_exits', where);
  await session.run('segments_apply_enters', { ...where, now: options.now });
  await session.run('segments_record_history', { ...where, now: options.now });
  if (options.announce)
    await session.run('segments_queue_webhooks', { ...where, now: options.now });
  await session.run('segments_drop_evaluation_tables');
}

/** Re-evaluates live segments for the profiles a metric step touched (`metric_touched_profiles`). */
export async function evaluateTouchedProfiles(
  session: Session,
  options: EvaluationOptions,
): Promise<void> {
  const segments = await session.all<StoredSegment>('segments_live_in_touched');
  for (const group of byWorkspace(segments)) {
    await evaluateWorkspace(session, group, 'touched', options);
  }
}

export async function hasAwaitingSegments(session: Session): Promise<boolean> {
  const row = await session.one<{ awaiting: number }>('segments_awaiting_count');
  return (row?.awaiting ?? 0) > 0;
}

/** Segments created active or moved to active since their last evaluation: over every profile. */
export async function evaluateAwaitingSegments(
  session: Session,
  options: EvaluationOptions,
): Promise<void> {
  const segments = await session.all<StoredSegment>('segments_awaiting_evaluation');
  for (const group of byWorkspace(segments)) {
    await evaluateWorkspace(session, group, 'workspace', options);
  }
}
