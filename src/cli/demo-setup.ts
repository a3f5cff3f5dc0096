import { putEventType } from '../catalog/event-types.js';
import type { Context } from '../context.js';
import { metricDefinitionInputSchema } from '../metrics/definition-schema.js';
import { createMetricDefinition } from '../metrics/definitions.js';
import { createSegment, DEFAULT_AUTOMATIONS } from '../segments/definitions.js';
import { createTenant } from '../tenancy/tenants.js';
import { issueToken } from '../tenancy/tokens.js';

export const DEMO_TENANT = 'demo';
export const DEMO_WORKSPACES = ['brand-eu', 'brand-us'] as const;

export interface DemoTokens {
  tenant: string;
  workspace: string;
  collector: string;
}

const EVENT_TYPES: [string, { dedupEntity: string; dedupKeyPaths: string[] } | null][] = [
  ['page_viewed', null],
  ['product_viewed', null],
  ['signed_up', null],
  ['order_completed', { dedupEntity: 'order', dedupKeyPaths: ['properties.order_id'] }],
];

/** A store's metrics; the segments benchmark uses them too. */
export const DEMO_METRICS = [
  {
    metric_name: 'orders',
    event_name: 'order_completed',
    value_kind: 'count',
    display_name: 'Orders',
  },
  {
    metric_name: 'orders_30d',
    event_name: 'order_completed',
    value_kind: 'count',
    window_days: 30,
  },
  {
    metric_name: 'revenue',
    event_name: 'order_completed',
    value_kind: 'property_number',
    value_path: 'properties.total',
    display_name: 'Lifetime revenue',
  },
  {
    metric_name: 'last_category',
    event_name: 'product_viewed',
    value_kind: 'property_string',
    value_path: 'properties.category',
    aggregation: 'latest',
  },
  {
    metric_name: 'recent_categories',
    event_name: 'product_viewed',
    value_kind: 'property_string',
    value_path: 'properties.category',
    aggregation: 'recent',
    keep: 5,
  },
  { metric_name: 'page_views_7d', event_name: 'page_viewed', value_kind: 'count', window_days: 7 },
];

const SEGMENTS = [
  {
    id: 'big-spenders',
    name: 'Big spenders',
    predicate: { metric: 'revenue', op: 'gte', value: 500 },
  },
  {
    id: 'repeat-buyers',
    name: 'Repeat buyers',
    predicate: { metric: 'orders', op: 'gte', value: 3 },
  },
  {
    id: 'shoe-browsers-no-order',
    name: 'Browsing shoes, no order yet',
    predicate: {
      all: [
        { metric: 'recent_categories', op: 'contains', value: 'shoes' },
        { metric: 'orders', op: 'eq', value: 0 },
      ],
    },
  },
];

/** The demo tenant: two brands, a store's event types, metrics and segments, and one token of each kind. */
export async function setUpDemo(context: Context): Promise<DemoTokens> {
  const tenant = await createTenant(context, DEMO_TENANT, [...DEMO_WORKSPACES]);
  for (const [name, dedup] of EVENT_TYPES) await putEventType(context, DEMO_TENANT, name, dedup);
  for (const metric of DEMO_METRICS) {
    await createMetricDefinition(context, DEMO_TENANT, metricDefinitionInputSchema.parse(metric));
  }
  for (const workspaceId of DEMO_WORKSPACES) {
    for (const segment of SEGMENTS) {
      await createSegment(
        context,
        { tenantId: DEMO_TENANT, workspaceId, segmentId: segment.id },
        {
          display_name: segment.name,
          predicate: segment.predicate,
          status: 'active',
          automations: DEFAULT_AUTOMATIONS,
        },
      );
    }
  }
  const workspace = await issueToken(context, DEMO_TENANT, {
    kind: 'workspace',
    workspaceId: 'brand-eu',
    name: 'demo analyst',
  });
  const collector = await issueToken(context, DEMO_TENANT, {
    kind: 'collector',
    workspaceId: null,
    name: 'demo server',
  });
  return { tenant: tenant.token, workspace: workspace.token, collector: collector.token };
}
