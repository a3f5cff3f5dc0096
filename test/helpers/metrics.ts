import { expect } from 'vitest';
import type { TestEnv } from './context.js';
import { call } from './tenant.js';

/** Creates a metric definition of tenant `acme` and expects 201. */
export async function defineMetric(
  env: TestEnv,
  tenantToken: string,
  definition: Record<string, unknown>,
): Promise<void> {
  const response = await call(
    env.app,
    tenantToken,
    'PUT',
    '/v1/tenants/acme/metric-definitions',
    definition,
  );
  expect(response.statusCode, response.body).toBe(201);
}

/**
 * Metric `orders` (a count of `order_completed`) and segment `buyers` of workspace `eu` (orders
 * ≥ 1) of tenant `acme`: the smallest setup whose first order changes a membership.
 */
export async function defineBuyers(env: TestEnv, tenantToken: string): Promise<void> {
  await defineMetric(env, tenantToken, {
    metric_name: 'orders',
    event_name: 'order_completed',
    value_kind: 'count',
  });
  const segment = await call(env.app, tenantToken, 'PUT', '/v1/tenants/acme/segments/buyers', {
    workspace_id: 'eu',
    display_name: 'Buyers',
    predicate: { metric: 'orders', op: 'gte', value: 1 },
  });
  expect(segment.statusCode, segment.body).toBe(201);
}
