import { z } from 'zod';
import type { Context } from '../context.js';
import { addRetiredMetricShapes, shapeOf } from '../metrics/shapes.js';
import { requireWorkspace } from '../tenancy/workspaces.js';

const feedingDefinitionSchema = z.object({
  event_name: z.string(),
  workspace_id: z.string(),
  value_kind: z.string(),
  value_path: z.string().nullable(),
  aggregation: z.string().nullable(),
  window_days: z.number().nullable(),
});

export const ruleMetricSchema = z.object({
  metric_name: z.string(),
  /** How its value compares: `number` (count, sum), `string` (latest), `list` (recent). */
  shape: z.enum(['number', 'string', 'list']),
  display_name: z.string().nullable(),
  /** False once every definition is deleted: rules read the values kept, which no longer change. */
  collected: z.boolean(),
  /** The definitions that feed it in the workspace, each with its event and window. */
  definitions: z.array(feedingDefinitionSchema),
});

export type RuleMetric = z.infer<typeof ruleMetricSchema>;

/**
 * The metrics a segment rule of a workspace can compare, as create, preview and evaluation read
 * them (`parseRule`): those its definitions collect, with what feeds each, then those no longer
 * collected whose values are kept there (docs/decisions.md, "Deleting what others use").
 */
export async function ruleMetrics(
  context: Context,
  tenantId: string,
  workspaceId: string,
): Promise<RuleMetric[]> {
  return context.store.read(async (session) => {
    await requireWorkspace(session, tenantId, workspaceId);
    const rows = await session.all<
      z.infer<typeof feedingDefinitionSchema> & { metric_name: string; display_name: string | null }
    >('rule_metric_definitions', { tenant_id: tenantId, workspace_id: workspaceId });
    const metrics = new Map<string, RuleMetric>();
    for (const { metric_name, display_name, ...definition } of rows) {
      const known = metrics.get(metric_name);
      if (known) {
        known.definitions.push(definition);
        known.display_name ??= display_name;
      } else {
        metrics.set(metric_name, {
          metric_name,
          shape: shapeOf(definition.value_kind, definition.aggregation),
          display_name,
          collected: true,
          definitions: [definition],
        });
      }
    }
    const shapes = new Map([...metrics].map(([name, metric]) => [name, metric.shape]));
    await addRetiredMetricShapes(session, tenantId, workspaceId, shapes);
    for (const [name, shape] of shapes)
      if (!metrics.has(name))
        metrics.set(name, {
          metric_name: name,
          shape,
          display_name: null,
          collected: false,
          definitions: [],
        });
    return [...metrics.values()].sort((a, b) => a.metric_name.localeCompare(b.metric_name));
  });
}
