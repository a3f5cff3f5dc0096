import type { Context } from '../context.js';
import { ValidationError } from '../errors.js';
import type { Session } from '../store/session.js';

/** How a metric's value is compared: count and sum are numbers, `latest` a string, `recent` a list. */
export type MetricShape = 'number' | 'string' | 'list';

/** The metrics a workspace can use in segments, by name, with how their values compare. */
export async function metricShapes(
  session: Session,
  tenantId: string,
  workspaceId: string,
): Promise<Map<string, MetricShape>> {
  const rows = await session.all<{
    metric_name: string;
    value_kind: string;
    aggregation: string | null;
  }>('metric_kinds_for_workspace', { tenant_id: tenantId, workspace_id: workspaceId });
  return new Map(rows.map((row) => [row.metric_name, shapeOf(row.value_kind, row.aggregation)]));
}

/** The shape of a definition's values, from its kind and aggregation. */
export function shapeOf(valueKind: string, aggregation: string | null): MetricShape {
  if (valueKind !== 'property_string') return 'number';
  return aggregation === 'recent' ? 'list' : 'string';
}

/**
 * Adds to `shapes` the metrics whose definitions were all deleted, with the shape of the values
 * they left (values kept keep their last value, interface "States"): segments on them go on
 * working, and a preview or a new rule may name them as the segments do. Read only when a rule
 * names a metric no definition has, since it reads the workspace's stored values.
 */
export async function addRetiredMetricShapes(
  session: Session,
  tenantId: string,
  workspaceId: string,
  shapes: Map<string, MetricShape>,
): Promise<void> {
  const stored = await session.all<{ metric_name: string; shape: MetricShape }>(
    'segments_stored_metric_shapes',
    { tenant_id: tenantId, workspace_id: workspaceId },
  );
  for (const row of stored)
    if (!shapes.has(row.metric_name)) shapes.set(row.metric_name, row.shape);
}

/** Refuses a `field` naming anything but a count or sum a workspace's rules can compare (422). */
export async function requireNumberMetric(
  context: Context,
  scope: { tenantId: string; workspaceId: string },
  name: string,
  field: string,
): Promise<void> {
  const shapes = await context.store.read((session) =>
    metricShapes(session, scope.tenantId, scope.workspaceId),
  );
  const shape = shapes.get(name);
  if (shape === 'number') return;
  throw ValidationError.field(
    field,
    shape ? `metric ${name} is not a number; only counts and sums sort` : `unknown metric ${name}`,
  );
}
