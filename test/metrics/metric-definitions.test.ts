import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const URL = '/v1/tenants/acme/metric-definitions';

/** The event types the metrics count, made once in the file's seeded template. */
async function registerOrderTypes(env: TestEnv, tokens: Tokens): Promise<void> {
  for (const name of ['order_completed', 'product_viewed']) {
    expect(
      (await call(env.app, tokens.tenant, 'PUT', `/v1/tenants/acme/event-types/${name}`, {}))
        .statusCode,
    ).toBe(201);
  }
}

describe('metric definitions', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ eventTypes: false, more: registerOrderTypes }));
  });
  afterEach(() => env.close());

  const put = (body: unknown) => call(env.app, tokens.tenant, 'PUT', URL, body);
  const list = async () =>
    (await call(env.app, tokens.tenant, 'GET', URL)).json().metric_definitions;

  const count = { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' };
  const sum = {
    metric_name: 'revenue',
    event_name: 'order_completed',
    value_kind: 'property_number',
    value_path: 'properties.total',
  };
  const latest = {
    metric_name: 'last_category',
    event_name: 'product_viewed',
    value_kind: 'property_string',
    value_path: 'properties.category',
    aggregation: 'latest',
  };

  it('creates a definition and lists it with every field, unset ones null', async () => {
    const created = await put(count);
    expect(created.statusCode).toBe(201);
    expect(created.json()).toEqual({ tenant_id: 'acme', metric_name: 'orders', status: 'created' });
    expect(await list()).toEqual([
      {
        workspace_id: '*',
        metric_name: 'orders',
        event_name: 'order_completed',
        value_kind: 'count',
        value_path: null,
        display_name: null,
        description: null,
        window_days: null,
        aggregation: null,
        keep: null,
        created_at: '2026-03-01T12:00:00.000Z',
        where: null,
        computed_for_segments: null,
      },
    ]);
  });

  it('gives recent lists a keep of 5 by default', async () => {
    expect(
      (await put({ ...latest, metric_name: 'recent_categories', aggregation: 'recent' }))
        .statusCode,
    ).toBe(201);
    expect((await list())[0]).toMatchObject({ aggregation: 'recent', keep: 5 });
  });

  it.each([
    ['value_path missing for property_number', { ...sum, value_path: undefined }, 'value_path'],
    ['value_path missing for property_string', { ...latest, value_path: undefined }, 'value_path'],
    [
      'value_path not of the form properties.<field>',
      { ...sum, value_path: 'total' },
      'value_path',
    ],
    ['value_path given for count', { ...count, value_path: 'properties.total' }, 'value_path'],
    [
      'aggregation missing for property_string',
      { ...latest, aggregation: undefined },
      'aggregation',
    ],
    ['aggregation given for count', { ...count, aggregation: 'latest' }, 'aggregation'],
    ['aggregation given for property_number', { ...sum, aggregation: 'recent' }, 'aggregation'],
    ['aggregation not latest or recent', { ...latest, aggregation: 'first' }, 'aggregation'],
    ['keep with latest', { ...latest, keep: 3 }, 'keep'],
    ['keep with count', { ...count, keep: 3 }, 'keep'],
    ['keep of 0', { ...latest, aggregation: 'recent', keep: 0 }, 'keep'],
    ['keep of 11', { ...latest, aggregation: 'recent', keep: 11 }, 'keep'],
    ['window_days of 0', { ...count, window_days: 0 }, 'window_days'],
    ['window_days of 731', { ...sum, window_days: 731 }, 'window_days'],
    ['window_days for property_string', { ...latest, window_days: 7 }, 'window_days'],
    ['an unknown value_kind', { ...count, value_kind: 'average' }, 'value_kind'],
    ['a metric_name in capitals', { ...count, metric_name: 'Orders' }, 'metric_name'],
    ['no event_name', { ...count, event_name: undefined }, 'event_name'],
    ['a bad workspace_id', { ...count, workspace_id: 'EU!' }, 'workspace_id'],
  ])('refuses %s with 422 naming %s', async (_case, body, field) => {
    const response = await put(body);
    expect(response.statusCode).toBe(422);
    const error = response.json().error;
    expect(error.code).toBe('validation_failed');
    expect(error.message.startsWith(`${field}:`), error.message).toBe(true);
    expect(await list()).toEqual([]);
  });

  it.each([
    ['property_string', { ...latest, value_path: 'properties.identifiers.email' }],
    ['property_string', { ...latest, value_path: 'properties.identifiers' }],
    ['property_number', { ...sum, value_path: 'properties.identifiers.phone' }],
  ])(
    'refuses a %s value_path into properties.identifiers with 422 naming it',
    async (_kind, body) => {
      const response = await put(body);
      expect(response.statusCode).toBe(422);
      expect(response.json().error).toMatchObject({
        code: 'validation_failed',
        message:
          'value_path: may not point into properties.identifiers: identifier values are stored sealed, never as metric values or dedup keys',
      });
      expect(await list()).toEqual([]);
    },
  );

  it('accepts paths that only look like identifiers', async () => {
    for (const path of ['properties.identifiers_seen', 'properties.customer.identifiers']) {
      const response = await put({ ...latest, metric_name: `m${path.length}`, value_path: path });
      expect(response.statusCode, response.body).toBe(201);
    }
  });

  it('refuses an event_name that is not a registered event type', async () => {
    const response = await put({ ...count, event_name: 'checkout_started' });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.message).toBe(
      'event_name: event type checkout_started is not registered',
    );
  });

  it('refuses a workspace that does not exist', async () => {
    const response = await put({ ...count, workspace_id: 'apac' });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.message).toBe('workspace_id: workspace apac does not exist');
  });

  it('answers 409 for an existing (metric, event) pair in the same scope', async () => {
    expect((await put(count)).statusCode).toBe(201);
    const again = await put(count);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('conflict');
    expect((await put({ ...count, workspace_id: 'eu' })).statusCode).toBe(201);
  });

  it('lets definitions share a name across events, but not across kinds', async () => {
    expect((await put(count)).statusCode).toBe(201);
    expect((await put({ ...count, event_name: 'product_viewed' })).statusCode).toBe(201);
    const otherKind = await put({ ...sum, metric_name: 'orders' });
    expect(otherKind.statusCode).toBe(422);
    expect(otherKind.json().error.message).toBe(
      'value_kind: metric orders is already defined with value_kind count',
    );
  });

  it('shows a workspace token only the definitions that apply to its workspace', async () => {
    await put(count);
    await put({ ...sum, workspace_id: 'eu' });
    await put({ ...sum, workspace_id: 'us', event_name: 'product_viewed' });
    const seen = (await call(env.app, tokens.workspace, 'GET', URL)).json().metric_definitions;
    expect(seen.map((row: { workspace_id: string }) => row.workspace_id).sort()).toEqual([
      '*',
      'eu',
    ]);
    expect(await list()).toHaveLength(3);
  });

  it('deletes a definition by (metric, event, workspace) and answers 404 for an unknown one', async () => {
    await put({ ...count, workspace_id: 'eu' });
    const wrongScope = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `${URL}?metric_name=orders&event_name=order_completed`,
    );
    expect(wrongScope.statusCode).toBe(404);
    const deleted = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `${URL}?metric_name=orders&event_name=order_completed&workspace_id=eu`,
    );
    expect(deleted.statusCode).toBe(204);
    expect(await list()).toEqual([]);
  });

  it('requires metric_name and event_name to delete', async () => {
    const response = await call(env.app, tokens.tenant, 'DELETE', `${URL}?metric_name=orders`);
    expect(response.statusCode).toBe(422);
    expect(response.json().error.message).toMatch(/^event_name:/);
  });
});
