import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const URL = '/v1/tenants/acme/event-types';

describe('event types', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ eventTypes: false }));
  });
  afterEach(() => env.close());

  const put = (name: string, body?: unknown) =>
    call(env.app, tokens.tenant, 'PUT', `${URL}/${name}`, body);
  const list = async () => (await call(env.app, tokens.workspace, 'GET', URL)).json().event_types;

  it('registers a type with dedup settings (201), then updates it (200)', async () => {
    const created = await put('order_completed', {
      dedup_entity: 'order',
      dedup_key_paths: ['properties.order_id'],
    });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({
      event_name: 'order_completed',
      dedup_entity: 'order',
      dedup_key_paths: ['properties.order_id'],
    });
    env.clock.advance(60_000);
    const updated = await put('order_completed', {});
    expect(updated.statusCode).toBe(200);
    expect(updated.json()).toEqual({
      event_name: 'order_completed',
      dedup_entity: null,
      dedup_key_paths: null,
      created_at: '2026-03-01T12:00:00.000Z',
      updated_at: '2026-03-01T12:01:00.000Z',
    });
  });

  it('registers a type without a body; its events dedup by id', async () => {
    expect((await put('page_viewed')).statusCode).toBe(201);
    expect(await list()).toEqual([
      expect.objectContaining({ event_name: 'page_viewed', dedup_key_paths: null }),
    ]);
  });

  it.each([
    ['dedup_entity without paths', { dedup_entity: 'order' }, 'dedup_key_paths'],
    ['paths without dedup_entity', { dedup_key_paths: ['properties.order_id'] }, 'dedup_entity'],
    ['an empty path list', { dedup_entity: 'order', dedup_key_paths: [] }, 'dedup_key_paths'],
    [
      'a path outside properties',
      { dedup_entity: 'order', dedup_key_paths: ['id'] },
      'dedup_key_paths.0',
    ],
    [
      'a path into properties.identifiers',
      { dedup_entity: 'user', dedup_key_paths: ['properties.identifiers.email'] },
      'dedup_key_paths.0',
    ],
    [
      'the identifiers object as a second path',
      { dedup_entity: 'user', dedup_key_paths: ['properties.order_id', 'properties.identifiers'] },
      'dedup_key_paths.1',
    ],
  ])('refuses %s with 422 naming %s', async (_case, body, field) => {
    const response = await put('order_completed', body);
    expect(response.statusCode).toBe(422);
    expect(
      response.json().error.message.startsWith(`${field}:`),
      response.json().error.message,
    ).toBe(true);
    expect(await list()).toEqual([]);
  });

  it.each(['Order_Completed', '1st_order', 'order-completed'])(
    'refuses the name %s with 422 naming event_name',
    async (name) => {
      const response = await put(name, {});
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toMatch(/^event_name: must be lowercase/);
    },
  );

  it('keeps dedup per tenant: another tenant may register the same name', async () => {
    await put('order_completed', {});
    const other = await call(
      env.app,
      tokens.otherTenant,
      'PUT',
      '/v1/tenants/globex/event-types/order_completed',
      {},
    );
    expect(other.statusCode).toBe(201);
    expect(await list()).toHaveLength(1);
  });

  it('deletes a type (204), then answers 404', async () => {
    await put('page_viewed', {});
    expect((await call(env.app, tokens.tenant, 'DELETE', `${URL}/page_viewed`)).statusCode).toBe(
      204,
    );
    expect(await list()).toEqual([]);
    const again = await call(env.app, tokens.tenant, 'DELETE', `${URL}/page_viewed`);
    expect(again.statusCode).toBe(404);
    expect(again.json().error.code).toBe('not_found');
  });

  it('refuses to delete a type that metric definitions read (409)', async () => {
    await put('order_completed', {});
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/metric-definitions', {
      metric_name: 'orders',
      event_name: 'order_completed',
      value_kind: 'count',
    });
    const response = await call(env.app, tokens.tenant, 'DELETE', `${URL}/order_completed`);
    expect(response.statusCode).toBe(409);
    expect(response.json().error.message).toContain('orders');
    expect(await list()).toHaveLength(1);
  });
});
