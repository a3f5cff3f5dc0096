import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import type { TestEnv } from '../helpers/context.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const ACME = '/v1/tenants/acme';

let env: TestEnv;
let tokens: Tokens;
afterEach(() => env.close());

async function openWithQuotas(config: Record<string, number>): Promise<void> {
  ({ env, tokens } = await openSeededEnv({ config, eventTypes: false }));
}

function expectQuotaExceeded(response: LightMyRequestResponse, quota: string, limit: number) {
  expect(response.statusCode, response.body).toBe(409);
  expect(response.json()).toEqual({
    error: { code: 'quota_exceeded', message: expect.any(String), details: { quota, limit } },
  });
  expect(response.json().error.message).toContain(`quota_${quota}`);
}

const putWorkspace = (id: string, token = tokens.tenant) =>
  call(env.app, token, 'PUT', `${ACME}/workspaces/${id}`, {});
const putEventType = (name: string) =>
  call(env.app, tokens.tenant, 'PUT', `${ACME}/event-types/${name}`, {});
const putMetric = (name: string) =>
  call(env.app, tokens.tenant, 'PUT', `${ACME}/metric-definitions`, {
    metric_name: name,
    event_name: 'order_completed',
    value_kind: 'count',
  });
const putSegment = (id: string, workspace = 'eu') =>
  call(env.app, tokens.tenant, 'PUT', `${ACME}/segments/${id}`, {
    workspace_id: workspace,
    display_name: id,
    predicate: { metric: 'orders', op: 'gte', value: 1 },
  });
const mintToken = () =>
  call(env.app, tokens.tenant, 'POST', `${ACME}/tokens`, { kind: 'collector', name: 'more' });

describe('per-tenant quotas', () => {
  it('refuses a workspace past quota_workspaces, per tenant; renaming one still works', async () => {
    // acme holds eu and us, globex holds eu.
    await openWithQuotas({ quota_workspaces: 3 });
    expect((await putWorkspace('asia')).statusCode).toBe(201);
    expectQuotaExceeded(await putWorkspace('africa'), 'workspaces', 3);
    const renamed = await call(env.app, tokens.tenant, 'PUT', `${ACME}/workspaces/eu`, {
      display_name: 'Europe',
    });
    expect(renamed.statusCode).toBe(200);
    const globex = await call(
      env.app,
      tokens.otherTenant,
      'PUT',
      '/v1/tenants/globex/workspaces/us',
      {},
    );
    expect(globex.statusCode).toBe(201);
    const listed = await call(env.app, tokens.tenant, 'GET', `${ACME}/workspaces`);
    expect(listed.json().workspaces.map((w: { workspace_id: string }) => w.workspace_id)).toEqual([
      'asia',
      'eu',
      'us',
    ]);
  });

  it('lets one of many concurrent creates take the last place, never more', async () => {
    await openWithQuotas({ quota_workspaces: 3 });
    const answers = await Promise.all(
      ['w1', 'w2', 'w3', 'w4', 'w5', 'w6'].map((id) => putWorkspace(id)),
    );
    expect(answers.map((answer) => answer.statusCode).sort()).toEqual([
      201, 409, 409, 409, 409, 409,
    ]);
    const listed = await call(env.app, tokens.tenant, 'GET', `${ACME}/workspaces`);
    expect(listed.json().workspaces).toHaveLength(3);
  });

  it('refuses a tenant created with more workspaces than quota_workspaces', async () => {
    await openWithQuotas({ quota_workspaces: 3 });
    const operator = operatorToken(env.context.dataDir.masterKey);
    const tooMany = await call(env.app, operator, 'POST', '/v1/operator/tenants', {
      tenant_id: 'initech',
      workspaces: ['a', 'b', 'c', 'd'],
    });
    expectQuotaExceeded(tooMany, 'workspaces', 3);
    const listed = await call(env.app, operator, 'GET', '/v1/operator/tenants');
    expect(listed.json().tenants.map((t: { tenant_id: string }) => t.tenant_id)).toEqual([
      'acme',
      'globex',
    ]);
    const fits = await call(env.app, operator, 'POST', '/v1/operator/tenants', {
      tenant_id: 'initech',
      workspaces: ['a', 'b', 'c', 'c'],
    });
    expect(fits.statusCode).toBe(201);
  });

  it('refuses an event type past quota_event_types; updating a registered one still works', async () => {
    await openWithQuotas({ quota_event_types: 2 });
    expect((await putEventType('order_completed')).statusCode).toBe(201);
    expect((await putEventType('page_viewed')).statusCode).toBe(201);
    expectQuotaExceeded(await putEventType('signed_up'), 'event_types', 2);
    expect((await putEventType('page_viewed')).statusCode).toBe(200);
    expect(
      (await call(env.app, tokens.tenant, 'DELETE', `${ACME}/event-types/page_viewed`)).statusCode,
    ).toBe(204);
    expect((await putEventType('signed_up')).statusCode).toBe(201);
  });

  it('refuses an identifier type past quota_identifier_types; updating one still works', async () => {
    // A new tenant holds cookie, device_id, email and phone.
    await openWithQuotas({ quota_identifier_types: 5 });
    const putType = (type: string) =>
      call(env.app, tokens.tenant, 'PUT', `${ACME}/identifier-types/${type}`, { tier: 'strong' });
    expect((await putType('user_id')).statusCode).toBe(201);
    expectQuotaExceeded(await putType('loyalty_id'), 'identifier_types', 5);
    expect((await putType('email')).statusCode).toBe(200);
  });

  it('refuses a metric definition past quota_metric_definitions', async () => {
    await openWithQuotas({ quota_metric_definitions: 2 });
    expect((await putEventType('order_completed')).statusCode).toBe(201);
    expect((await putMetric('orders')).statusCode).toBe(201);
    expect((await putMetric('order_count')).statusCode).toBe(201);
    expectQuotaExceeded(await putMetric('more_orders'), 'metric_definitions', 2);
    const deleted = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `${ACME}/metric-definitions?metric_name=orders&event_name=order_completed`,
    );
    expect(deleted.statusCode).toBe(204);
    expect((await putMetric('more_orders')).statusCode).toBe(201);
  });

  it('refuses a segment past quota_segments, counted over all workspaces of the tenant', async () => {
    await openWithQuotas({ quota_segments: 2 });
    expect((await putEventType('order_completed')).statusCode).toBe(201);
    expect((await putMetric('orders')).statusCode).toBe(201);
    expect((await putSegment('buyers')).statusCode).toBe(201);
    expect((await putSegment('buyers', 'us')).statusCode).toBe(201);
    expectQuotaExceeded(await putSegment('loyal'), 'segments', 2);
    // A duplicate is still a conflict about that segment, not about the quota.
    const duplicate = await putSegment('buyers');
    expect(duplicate.json().error.code).toBe('conflict');
    const deleted = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `${ACME}/segments/buyers?workspace_id=us`,
    );
    expect(deleted.statusCode).toBe(204);
    expect((await putSegment('loyal')).statusCode).toBe(201);
  });

  it('refuses a token past quota_tokens, counting only live ones', async () => {
    // acme holds a tenant, two workspace and a collector token live, and one revoked.
    await openWithQuotas({ quota_tokens: 5 });
    const fifth = await mintToken();
    expect(fifth.statusCode).toBe(201);
    expectQuotaExceeded(await mintToken(), 'tokens', 5);
    const operator = operatorToken(env.context.dataDir.masterKey);
    expectQuotaExceeded(
      await call(env.app, operator, 'POST', '/v1/operator/tenants/acme/tenant-tokens', {}),
      'tokens',
      5,
    );
    const revoked = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `${ACME}/tokens/${fifth.json().token_id}`,
    );
    expect(revoked.statusCode).toBe(204);
    expect((await mintToken()).statusCode).toBe(201);
  });
});
