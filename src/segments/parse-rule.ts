import { ValidationError } from '../errors.js';
import { addRetiredMetricShapes, type MetricShape, metricShapes } from '../metrics/shapes.js';
import type { Session } from '../store/session.js';
import { type Predicate, parsePredicate, type RuleScope } from './predicate.js';

/** The metrics a workspace's rules compare by name and the event types their behaviours name. */
export async function ruleScope(
  session: Session,
  tenantId: string,
  workspaceId: string,
): Promise<RuleScope & { shapes: Map<string, MetricShape> }> {
  const shapes = await metricShapes(session, tenantId, workspaceId);
  const eventTypes = await session.all<{ event_name: string }>('event_type_names', {
    tenant_id: tenantId,
  });
  return { shapes, eventTypes: new Set(eventTypes.map((row) => row.event_name)) };
}

/**
 * Checks a rule against the metrics a workspace can use: those its definitions collect and, when
 * the rule names another, those whose definitions were deleted but whose values are kept. Live
 * evaluation reads rules the same way, so a preview, a new segment and a segment's members agree
 * about a metric no longer collected (docs/decisions.md, "Deleting what others use").
 */
export async function parseRule(
  session: Session,
  raw: unknown,
  tenantId: string,
  workspaceId: string,
): Promise<Predicate> {
  const scope = await ruleScope(session, tenantId, workspaceId);
  try {
    return parsePredicate(raw, scope);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    await addRetiredMetricShapes(session, tenantId, workspaceId, scope.shapes);
    return parsePredicate(raw, scope);
  }
}
