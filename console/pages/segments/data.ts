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
  /** Consent categories a member's webhooks need; without them a delivery is withheld. */
  required_consent: string[];
  created_at: string;
  updated_at: string;
  evaluation_error: string | null;
  member_count?: number;
}

export const SEGMENT_STATUSES = ['draft', 'active', 'paused', 'archived'] as const;
export type SegmentStatus = (typeof SEGMENT_STATUSES)[number];

/** A definition feeding a metric, as `GET …/segment-metrics` lists it. */
interface FeedingDefinition {
  event_name: string;
  value_kind: 'count' | 'property_number' | 'property_string';
  value_path: string | null;
  aggregation: 'latest' | 'recent' | null;
  window_days: number | null;
}

/** A metric a rule can compare (`GET /v1/tenants/{t}/segment-metrics`). */
interface RuleMetric {
  metric_name: string;
  shape: MetricShape;
  display_name: string | null;
  collected: boolean;
  definitions: FeedingDefinition[];
}

export interface WorkspaceMetric {
  name: string;
  shape: MetricShape;
  label: string;
}

/** "count of order_placed in 30 days", "latest properties.category of product_viewed". */
function feedOf(definition: FeedingDefinition): string {
  const what =
    definition.value_kind === 'count'
      ? 'count'
      : definition.value_kind === 'property_number'
        ? `sum of ${definition.value_path}`
        : `${definition.aggregation} ${definition.value_path}`;
  const window = definition.window_days === null ? '' : ` in ${definition.window_days} days`;
  return `${what} of ${definition.event_name}${window}`;
}

/** What an option says of a metric: its name or label, then what feeds it. */
function labelOf(metric: RuleMetric): string {
  const name =
    metric.display_name && metric.display_name !== metric.metric_name
      ? `${metric.display_name} (${metric.metric_name})`
      : metric.metric_name;
  const feeds = metric.collected
    ? metric.definitions.map(feedOf).join('; ')
    : 'no longer collected, values kept';
  return `${name}: ${feeds}`;
}

/**
 * The metrics a workspace's segments can compare, as the API reads rules: those its definitions
 * collect (one per name: definitions sharing a name combine), then those whose values are kept.
 */
export async function workspaceMetrics(
  tenant: string,
  workspace: string,
): Promise<WorkspaceMetric[]> {
  const answer = await api<{ metrics: RuleMetric[] }>(
    'GET',
    `${pathOf`/v1/tenants/${tenant}/segment-metrics`}?workspace_id=${encodeURIComponent(workspace)}`,
  );
  return answer.metrics.map((metric) => ({
    name: metric.metric_name,
    shape: metric.shape,
    label: labelOf(metric),
  }));
}

/** The tenant's event types by name, which a rule's behaviours name. */
export async function eventTypeNames(tenant: string): Promise<string[]> {
  const types = await everyPage<{ event_name: string }>(
    pathOf`/v1/tenants/${tenant}/event-types`,
    'event_types',
  );
  return types.map((type) => type.event_name).sort();
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
 * The predicate a new segment starts from, set by "Copy as a new segment" on a segment page
 * (segments are create-only, so this is how a rule is changed): kept in memory, not in the URL.
 */
export const startingPredicate = signal<unknown>(null);
