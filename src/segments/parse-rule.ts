import { ValidationError } from '../errors.js';
import { addRetiredMetricShapes, metricShapes } from '../metrics/shapes.js';
import type { Session } from '../store/session.js';
import { type Predicate, parsePredicate } from './predicate.js';

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
  const shapes = await metricShapes(session, tenantId, workspaceId);
  try {
    return parsePredicate(raw, shapes);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    await addRetiredMetricShapes(session, tenantId, workspaceId, shapes);
    return parsePredicate(raw, shapes);
  }
}
