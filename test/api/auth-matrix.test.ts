import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putEventType } from '../../src/catalog/event-types.js';
import { metricDefinitionInputSchema } from '../../src/metrics/definition-schema.js';
import { createMetricDefinition } from '../../src/metrics/definitions.js';
import { createSegment, DEFAULT_AUTOMATIONS } from '../../src/segments/definitions.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import { issueToken } from '../../src/tenancy/tokens.js';
import type { TestEnv } from '../helpers/context.js';
import { seedProfiles } from '../helpers/profiles.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

/** Principals in the order they call each route; the tenant token goes last as it may delete. */
const PRINCIPALS = [
  'none',
  'revoked',
  'otherTenant',
  'otherWorkspace',
  'workspace',
  'collector',
  'tenant',
] as const;
type PrincipalName = (typeof PRINCIPALS)[number];
type Expected = [number, number, number, number, number, number, number];

interface RouteCase {
  route: string;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string | ((env: TestEnv) => Promise<string>);
  body?: unknown;
  expected: Expected;
}

const W = 403;
const PROFILE = `p_${'ab'.repeat(12)}`;
const segmentBody = {
  workspace_id: 'eu',
  display_name: 'Big',
  predicate: { metric: 'orders', op: 'gte', value: 2 },
};

// Columns: none, revoked, other tenant, workspace token of us, workspace token of eu, collector, tenant.
const ROUTES: RouteCase[] = [
  {
    route: 'whoami',
    method: 'GET',
    url: '/v1/whoami',
    expected: [401, 401, 200, 200, 200, 200, 200],
  },
  {
    route: 'create tenant',
    method: 'POST',
    url: '/v1/operator/tenants',
    body: { tenant_id: 'new' },
    expected: [401, 401, W, W, W, W, W],
  },
  {
    route: 'list tenants',
    method: 'GET',
    url: '/v1/operator/tenants',
    expected: [401, 401, W, W, W, W, W],
  },
  {
    route: 'issue tenant token',
    method: 'POST',
    url: '/v1/operator/tenants/acme/tenant-tokens',
    body: {},
    expected: [401, 401, W, W, W, W, W],
  },
  {
    route: 'put workspace',
    method: 'PUT',
    url: '/v1/tenants/acme/workspaces/apac',
    body: { display_name: 'APAC' },
    expected: [401, 401, W, W, W, W, 201],
  },
  {
    route: 'list workspaces',
    method: 'GET',
    url: '/v1/tenants/acme/workspaces',
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'get workspace',
    method: 'GET',
    url: '/v1/tenants/acme/workspaces/eu',
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'mint token',
    method: 'POST',
    url: '/v1/tenants/acme/tokens',
    body: { kind: 'workspace', workspace_id: 'eu', name: 'bi' },
    expected: [401, 401, W, W, W, W, 201],
  },
  {
    route: 'list tokens',
    method: 'GET',
    url: '/v1/tenants/acme/tokens',
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'revoke token',
    method: 'DELETE',
    url: async (env) => {
      const token = await issueToken(env.context, 'acme', {
        kind: 'collector',
        workspaceId: null,
        name: 'spare',
      });
      return `/v1/tenants/acme/tokens/${token.token_id}`;
    },
    expected: [401, 401, W, W, W, W, 204],
  },
  {
    route: 'put identifier type',
    method: 'PUT',
    url: '/v1/tenants/acme/identifier-types/loyalty_id',
    body: { tier: 'strong' },
    expected: [401, 401, W, W, W, W, 201],
  },
  {
    route: 'list identifier types',
    method: 'GET',
    url: '/v1/tenants/acme/identifier-types',
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'put placeholders',
    method: 'PUT',
    url: '/v1/tenants/acme/placeholders',
    body: { values: { email: ['x@y.z'] } },
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'get placeholders',
    method: 'GET',
    url: '/v1/tenants/acme/placeholders',
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'register event type',
    method: 'PUT',
    url: '/v1/tenants/acme/event-types/signed_up',
    body: {},
    expected: [401, 401, W, W, W, W, 201],
  },
  {
    route: 'list event types',
    method: 'GET',
    url: '/v1/tenants/acme/event-types',
    expected: [401, 401, W, 200, 200, W, 200],
  },
  {
    route: 'count events by type',
    method: 'GET',
    url: '/v1/tenants/acme/event-type-counts',
    expected: [401, 401, W, 200, 200, W, 200],
  },
  {
    route: 'delete event type',
    method: 'DELETE',
    url: '/v1/tenants/acme/event-types/page_viewed',
    expected: [401, 401, W, W, W, W, 204],
  },
  {
    route: 'create metric definition',
    method: 'PUT',
    url: '/v1/tenants/acme/metric-definitions',
    body: { metric_name: 'order_count', event_name: 'order_completed', value_kind: 'count' },
    expected: [401, 401, W, W, W, W, 201],
  },
  {
    route: 'list metric definitions',
    method: 'GET',
    url: '/v1/tenants/acme/metric-definitions',
    expected: [401, 401, W, 200, 200, W, 200],
  },
  {
    route: 'list metric definitions of eu',
    method: 'GET',
    url: '/v1/tenants/acme/metric-definitions?workspace_id=eu',
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'delete metric definition',
    method: 'DELETE',
    url: '/v1/tenants/acme/metric-definitions?metric_name=orders&event_name=order_completed',
    expected: [401, 401, W, W, W, W, 204],
  },
  {
    route: 'preview segment',
    method: 'POST',
    url: '/v1/tenants/acme/segments/preview',
    body: { workspace_id: 'eu', predicate: segmentBody.predicate },
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'create segment',
    method: 'PUT',
    url: '/v1/tenants/acme/segments/new-one',
    body: segmentBody,
    expected: [401, 401, W, W, W, W, 201],
  },
  {
    route: 'list segments of eu',
    method: 'GET',
    url: '/v1/tenants/acme/segments?workspace_id=eu',
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'get segment',
    method: 'GET',
    url: '/v1/tenants/acme/segments/vip/definition?workspace_id=eu',
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'set segment status',
    method: 'PUT',
    url: '/v1/tenants/acme/segments/vip/status',
    body: { workspace_id: 'eu', status: 'paused' },
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'segment members',
    method: 'GET',
    url: '/v1/tenants/acme/segments/vip/members?workspace_id=eu',
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'list webhooks',
    method: 'GET',
    url: '/v1/operator/webhooks?status=failed',
    expected: [401, 401, W, W, W, W, W],
  },
  {
    route: 'write a snapshot',
    method: 'POST',
    url: '/v1/operator/snapshots',
    body: { path: '/tmp/never-written.duckdb' },
    expected: [401, 401, W, W, W, W, W],
  },
  {
    route: 'write an export',
    method: 'POST',
    url: '/v1/operator/exports',
    body: { dir: '/tmp/never-written-export', format: 'parquet' },
    expected: [401, 401, W, W, W, W, W],
  },
  {
    route: 'retry webhooks',
    method: 'POST',
    url: '/v1/operator/webhooks/retry',
    body: {},
    expected: [401, 401, W, W, W, W, W],
  },
  {
    route: 'look up a profile',
    method: 'GET',
    url: '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=nobody@shop.test',
    expected: [401, 401, W, W, 404, W, 404],
  },
  {
    route: 'customer table',
    method: 'GET',
    url: '/v1/tenants/acme/workspaces/eu/profiles/summary',
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'profile view',
    method: 'GET',
    url: `/v1/tenants/acme/workspaces/eu/profiles/${PROFILE}`,
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'erase a profile (dry run)',
    method: 'DELETE',
    url: `/v1/tenants/acme/workspaces/eu/profiles/${PROFILE}?dry_run=true`,
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'erasure audit log',
    method: 'GET',
    url: '/v1/tenants/acme/erasures',
    expected: [401, 401, W, W, W, W, 200],
  },
  {
    route: 'profile history',
    method: 'GET',
    url: `/v1/tenants/acme/workspaces/eu/profiles/${PROFILE}/history`,
    expected: [401, 401, W, W, 200, W, 200],
  },
  {
    route: 'delete segment',
    method: 'DELETE',
    url: '/v1/tenants/acme/segments/vip?workspace_id=eu',
    expected: [401, 401, W, W, W, W, 204],
  },
];

async function seedCatalog(env: TestEnv): Promise<void> {
  await seedProfiles(env.context, 'acme', 'eu', { [PROFILE]: { orders: 2 } });
  await putEventType(env.context, 'acme', 'order_completed', null);
  await putEventType(env.context, 'acme', 'page_viewed', null);
  await createMetricDefinition(
    env.context,
    'acme',
    metricDefinitionInputSchema.parse({
      metric_name: 'orders',
      event_name: 'order_completed',
      value_kind: 'count',
    }),
  );
  await createSegment(
    env.context,
    { tenantId: 'acme', workspaceId: 'eu', segmentId: 'vip' },
    {
      display_name: 'VIP',
      predicate: { metric: 'orders', op: 'gte', value: 5 },
      status: 'active',
      automations: DEFAULT_AUTOMATIONS,
    },
  );
}

describe.each(ROUTES)('$method $route', (route) => {
  let env: TestEnv;
  let tokens: Tokens;
  let url: string;

  beforeAll(async () => {
    ({ env, tokens } = await openSeededEnv({ eventTypes: false }));
    await seedCatalog(env);
    url = typeof route.url === 'string' ? route.url : await route.url(env);
  });
  afterAll(() => env.close());

  it.each(PRINCIPALS.map((principal, index) => ({ principal, status: route.expected[index] })))(
    'answers $status to $principal',
    async ({ principal, status }: { principal: PrincipalName; status: number | undefined }) => {
      const token = principal === 'none' ? null : tokens[principal];
      const response = await call(env.app, token, route.method, url, route.body);
      expect(response.statusCode, response.body).toBe(status);
      if (response.statusCode >= 400) {
        expect(response.json()).toMatchObject({
          error: { code: expect.any(String), message: expect.any(String) },
        });
      }
    },
  );
});

/**
 * The operator may name any tenant; one that is not there is said, not answered with an empty
 * list or blamed on a workspace (issue 36: `cds segments list -t nosuch` printed "(none)").
 */
describe('the operator naming a tenant that does not exist', () => {
  let env: TestEnv;
  beforeAll(async () => {
    ({ env } = await openSeededEnv({ eventTypes: false }));
  });
  afterAll(() => env.close());

  const tenantRoutes = ROUTES.flatMap((route) =>
    typeof route.url === 'string' && route.url.startsWith('/v1/tenants/acme/')
      ? [{ ...route, url: route.url.replace('/v1/tenants/acme/', '/v1/tenants/nosuch/') }]
      : [],
  );

  it.each(tenantRoutes)('$method $route answers 404', async (route) => {
    const operator = operatorToken(env.context.dataDir.masterKey);
    const response = await call(env.app, operator, route.method, route.url, route.body);
    expect(response.statusCode, response.body).toBe(404);
    expect(response.json()).toEqual({
      error: { code: 'not_found', message: 'tenant nosuch does not exist' },
    });
  });
});
