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
  return new Map(
    rows.map((row) => [
      row.metric_name,
      row.value_kind !== 'property_string'
        ? 'number'
        : row.aggregation === 'recent'
          ? 'list'
          : 'string',
    ]),
  );
}
