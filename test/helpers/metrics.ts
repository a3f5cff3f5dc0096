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
