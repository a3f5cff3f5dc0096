import { signal } from '@preact/signals';
import { api, pathOf } from '../../api.js';
import { everyPage } from '../../paging.js';
import type { MetricShape } from './rule.js';

/** A segment as the API's list route gives it. */
export interface SegmentItem {
  segment_id: string;
  workspace_id: string;
  display_name: string;
  predicate: unknown;
  status: SegmentStatus;
  automations: { on_enter: boolean; on_exit: boolean; on_backfill: boolean };
  created_at: string;
  updated_at: string;
  evaluation_error: string | null;
  member_count?: number;
}

export const SEGMENT_STATUSES = ['draft', 'active', 'paused', 'archived'] as const;
export type SegmentStatus = (typeof SEGMENT_STATUSES)[number];

interface MetricDefinition {
  metric_name: string;
  value_kind: 'count' | 'property_number' | 'property_string';
  aggregation: 'latest' | 'recent' | null;
  display_name: string | null;
}

/** How a definition's values compare, as src/metrics/shapes.ts decides it. */
function shapeOf(definition: MetricDefinition): MetricShape {
  if (definition.value_kind !== 'property_string') return 'number';
  return definition.aggregation === 'recent' ? 'list' : 'string';
}

export interface WorkspaceMetric {
  name: string;
  shape: MetricShape;
  label: string;
}

/** The metrics a workspace's segments can compare, one per name (definitions sharing a name combine). */
export async function workspaceMetrics(
  tenant: string,
  workspace: string,
): Promise<WorkspaceMetric[]> {
  const definitions = await everyPage<MetricDefinition>(
    `${pathOf`/v1/tenants/${tenant}/metric-definitions`}?workspace_id=${encodeURIComponent(workspace)}`,
    'metric_definitions',
  );
  const byName = new Map<string, WorkspaceMetric>();
  for (const definition of definitions)
    if (!byName.has(definition.metric_name))
      byName.set(definition.metric_name, {
        name: definition.metric_name,
        shape: shapeOf(definition),
        label: definition.display_name ?? definition.metric_name,
      });
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export function listSegments(tenant: string, workspace: string): Promise<SegmentItem[]> {
  return everyPage<SegmentItem>(
    `${pathOf`/v1/tenants/${tenant}/segments`}?workspace_id=${encodeURIComponent(workspace)}`,
    'segments',
  );
}

export function setStatus(
  tenant: string,
  workspace: string,
  segment: string,
  status: SegmentStatus,
): Promise<SegmentItem> {
  return api('PUT', pathOf`/v1/tenants/${tenant}/segments/${segment}/status`, {
    workspace_id: workspace,
    status,
  });
}

/**
 * The predicate a new segment starts from, set by "New segment from this rule" on a segment page
 * (segments are create-only, so this is how a rule is changed): kept in memory, not in the URL.
 */
export const startingPredicate = signal<unknown>(null);
