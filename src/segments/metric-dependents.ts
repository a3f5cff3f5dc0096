import { z } from 'zod';
import type { Context } from '../context.js';
import { NotFoundError } from '../errors.js';
import { metricsNamedIn } from './predicate.js';

/** A metric definition as its delete names it (interface: the pair and its workspace scope). */
export interface MetricDefinitionKey {
  metricName: string;
  eventName: string;
  workspaceScope: string;
}

export const metricDependentSchema = z.object({
  workspace_id: z.string(),
  segment_id: z.string(),
  display_name: z.string(),
  status: z.string(),
  /** Another definition still feeds the metric in the segment's workspace. */
  still_collected: z.boolean(),
});

export type MetricDependent = z.infer<typeof metricDependentSchema>;

/**
 * The segments whose rule compares the metric of a definition, in the workspaces the definition
 * reaches, and whether another definition keeps the metric collected there once it is deleted.
 * Where none does, the segment goes on with the values kept (docs/decisions.md, "Deleting what
 * others use"): what a console says before the delete.
 */
export async function metricDefinitionDependents(
  context: Context,
  tenantId: string,
  key: MetricDefinitionKey,
): Promise<MetricDependent[]> {
  return context.store.read(async (session) => {
    const params = {
      tenant_id: tenantId,
      workspace_scope: key.workspaceScope,
      metric_name: key.metricName,
      event_name: key.eventName,
    };
    const definition = await session.one<{ for_segments: boolean }>(
      'get_metric_definition',
      params,
    );
    if (!definition) {
      throw new NotFoundError(
        `no metric ${key.metricName} on event ${key.eventName} for workspace ${key.workspaceScope}`,
      );
    }
    if (definition.for_segments) {
      // Computed for these segments' behaviours: a delete is refused while any of them exists.
      const segments = await session.all<Omit<MetricDependent, 'still_collected'>>(
        'segments_computing_behaviour',
        { tenant_id: tenantId, workspace_id: key.workspaceScope, metric_name: key.metricName },
      );
      return segments.map((segment) => ({ ...segment, still_collected: false }));
    }
    const others = new Set(
      (await session.all<{ workspace_scope: string }>('metric_scopes_besides', params)).map(
        (row) => row.workspace_scope,
      ),
    );
    const segments = await session.all<{
      workspace_id: string;
      segment_id: string;
      display_name: string;
      status: string;
      predicate: string;
    }>('segments_in_metric_scope', { tenant_id: tenantId, workspace_scope: key.workspaceScope });
    return segments
      .filter((segment) => metricsNamedIn(JSON.parse(segment.predicate)).has(key.metricName))
      .map(({ predicate: _predicate, ...segment }) => ({
        ...segment,
        still_collected: others.has('*') || others.has(segment.workspace_id),
      }));
  });
}
