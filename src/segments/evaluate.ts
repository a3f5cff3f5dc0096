import { ValidationError } from '../errors.js';
import { addRetiredMetricShapes } from '../metrics/shapes.js';
import type { Session } from '../store/session.js';
import { fillSlots, sql } from '../store/sql-files.js';
import { componentLog } from '../telemetry/log.js';
import { prometheusSeries } from '../telemetry/prometheus.js';
import { compileSegmentSet, MAX_SEGMENTS_PER_MASK } from './compile.js';
import { ruleScope } from './parse-rule.js';
import { type Predicate, parsePredicate, type RuleScope } from './predicate.js';

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

/** A predicate, or why the stored one cannot be evaluated (the message names the faulty path). */
function parsed(segment: StoredSegment, scope: RuleScope): Predicate | string {
  let raw: unknown;
  try {
    raw = JSON.parse(segment.predicate);
  } catch {
    return 'predicate: the stored predicate is not JSON';
  }
  try {
    return parsePredicate(raw, scope);
  } catch (error) {
    if (error instanceof ValidationError) return error.message;
    throw error;
  }
}

interface Checked {
  evaluable: { segment: StoredSegment; predicate: Predicate }[];
  broken: { segment: StoredSegment; error: string }[];
}

/**
 * The segments of one workspace with their predicates, checked against the live definitions'
 * shapes, then, for a metric whose definitions were all deleted, the kind of the values it left.
 * A segment that still does not pass is broken: stored before a rule existed (a number out of
 * range, too many comparisons), written around the API, or naming a metric that left nothing.
 * Every predicate that passes compiles to total SQL (no comparison of typed values can raise), so
 * this check is what keeps a definition from failing a batch.
 */
async function checked(session: Session, segments: StoredSegment[]): Promise<Checked> {
  const { tenant_id: tenantId, workspace_id: workspaceId } = segments[0] as StoredSegment;
  const scope = await ruleScope(session, tenantId, workspaceId);
  let storedShapesAdded = false;
  const result: Checked = { evaluable: [], broken: [] };
  for (const segment of segments) {
    let predicate = parsed(segment, scope);
    if (typeof predicate === 'string' && !storedShapesAdded) {
      await addRetiredMetricShapes(session, tenantId, workspaceId, scope.shapes);
      storedShapesAdded = true;
      predicate = parsed(segment, scope);
    }
    if (typeof predicate === 'string') result.broken.push({ segment, error: predicate });
    else result.evaluable.push({ segment, predicate });
  }
  return result;
}

/**
 * A broken segment keeps its members and is skipped from now on: it carries its error until its
 * status is set again (`update_segment_status`), so ingest does not parse it at every batch.
 */
async function markBroken(
  session: Session,
  broken: Checked['broken'],
  options: EvaluationOptions,
): Promise<void> {
  for (const { segment, error } of broken) {
    await session.run('segments_mark_failed', {
      tenant_id: segment.tenant_id,
      workspace_id: segment.workspace_id,
      segment_id: segment.segment_id,
      error,
      now: options.now,
    });
    componentLog('segments').error(
      {
        tenant_id: segment.tenant_id,
        workspace_id: segment.workspace_id,
        segment_id: segment.segment_id,
        cause: error,
      },
      'segment evaluation failed; the segment is skipped until its status is set again',
    );
  }
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
  const { evaluable, broken } = await checked(session, segments);
  await markBroken(session, broken, options);
  if (broken.length > 0)
    prometheusSeries().segmentEvaluations.inc({ outcome: 'failed' }, broken.length);
  if (evaluable.length === 0) return;
  if (scope === 'workspace') {
    await session.run('segments_mark_evaluated', {
      ...where,
      now: options.now,
      segment_ids: JSON.stringify(evaluable.map(({ segment }) => segment.segment_id)),
    });
  }
  const compiled = compileSegmentSet(evaluable);
  await session.run('segments_create_evaluation_tables');
  if (scope === 'touched') await session.run('segments_scope_touched', where);
  await session.run('segments_choose', {
    ...where,
    backfill: scope === 'workspace',
    segment_ids: JSON.stringify(evaluable.map(({ segment }) => segment.segment_id)),
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
  prometheusSeries().segmentEvaluations.inc(
    { outcome: scope === 'touched' ? 'touched_profiles' : 'workspace' },
    evaluable.length,
  );
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
  return (await session.all('segments_awaiting_evaluation')).length > 0;
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
