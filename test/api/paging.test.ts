import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';

const ACME = '/v1/tenants/acme';

let env: TestEnv;
let tokens: Tokens;
let operator: string;

/** Pages through a listing `limit` at a time; answers every item of every page, in order. */
async function walk(
  token: string,
  url: string,
  key: string,
  limit = 2,
): Promise<{ items: Record<string, unknown>[]; pages: number }> {
  const items: Record<string, unknown>[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const separator = url.includes('?') ? '&' : '?';
    const query: string = cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`;
    const response = await call(env.app, token, 'GET', `${url}${separator}limit=${limit}${query}`);
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    expect(body[key].length).toBeLessThanOrEqual(limit);
    items.push(...body[key]);
    cursor = body.next_cursor;
    pages += 1;
  } while (cursor !== null);
  return { items, pages };
}

beforeAll(async () => {
  ({ env, tokens } = await openSeededEnv({ eventTypes: false }));
  operator = operatorToken(env.context.dataDir.masterKey);
  for (const tenant of ['initech', 'umbrella', 'hooli']) {
    await call(env.app, operator, 'POST', '/v1/operator/tenants', { tenant_id: tenant });
  }
  for (const workspace of ['asia', 'africa', 'oceania']) {
    await call(env.app, tokens.tenant, 'PUT', `${ACME}/workspaces/${workspace}`, {});
  }
  for (const name of ['order_completed', 'page_viewed', 'signed_up', 'added_to_cart', 'searched']) {
    await call(env.app, tokens.tenant, 'PUT', `${ACME}/event-types/${name}`, {});
  }
  for (const [metric, event, workspace] of [
    ['orders', 'order_completed', '*'],
    ['orders', 'order_completed', 'eu'],
    ['orders', 'page_viewed', '*'],
    ['views', 'page_viewed', 'us'],
    ['signups', 'signed_up', '*'],
  ]) {
    const created = await call(env.app, tokens.tenant, 'PUT', `${ACME}/metric-definitions`, {
      metric_name: metric,
      event_name: event,
      value_kind: 'count',
      workspace_id: workspace,
    });
    expect(created.statusCode, created.body).toBe(201);
  }
  // A new tenant holds cookie, device_id, email and phone.
  await call(env.app, tokens.tenant, 'PUT', `${ACME}/identifier-types/user_id`, { tier: 'strong' });
  // Tokens made within one millisecond share created_at: the cursor must still tell them apart.
  for (const name of ['a', 'b', 'c']) {
    await call(env.app, tokens.tenant, 'POST', `${ACME}/tokens`, { kind: 'collector', name });
  }
});
afterAll(() => env.close());

describe('paged listings', () => {
  it.each([
    ['workspaces', ACME, 'workspace_id', 5],
    ['event_types', ACME, 'event_name', 5],
    ['tokens', ACME, 'token_id', 8],
    ['tenants', '/v1/operator', 'tenant_id', 5],
    ['identifier_types', ACME, 'type', 5],
  ])(
    'pages %s two at a time, visiting each once, in the order of one page',
    async (key, base, id, total) => {
      const path = key.replace('_', '-');
      const token = key === 'tenants' ? operator : tokens.tenant;
      const url = `${base}/${path}`;
      const paged = await walk(token, url, key);
      const whole = (await call(env.app, token, 'GET', url)).json();
      expect(whole.next_cursor).toBeNull();
      expect(whole[key]).toHaveLength(total);
      expect(paged.items).toEqual(whole[key]);
      expect(new Set(paged.items.map((item) => item[id])).size).toBe(total);
      expect(paged.pages).toBe(Math.ceil(total / 2));
    },
  );

  it('pages metric definitions, all of them and those one workspace sees', async () => {
    const all = await walk(tokens.tenant, `${ACME}/metric-definitions`, 'metric_definitions');
    expect(all.items.map((d) => `${d.metric_name}|${d.event_name}|${d.workspace_id}`)).toEqual([
      'orders|order_completed|*',
      'orders|order_completed|eu',
      'orders|page_viewed|*',
      'signups|signed_up|*',
      'views|page_viewed|us',
    ]);
    const eu = await walk(tokens.workspace, `${ACME}/metric-definitions`, 'metric_definitions');
    expect(eu.items.map((d) => `${d.metric_name}|${d.event_name}|${d.workspace_id}`)).toEqual([
      'orders|order_completed|*',
      'orders|order_completed|eu',
      'orders|page_viewed|*',
      'signups|signed_up|*',
    ]);
  });

  it('answers next_cursor null on a last page that is exactly full', async () => {
    const response = await call(env.app, tokens.tenant, 'GET', `${ACME}/workspaces?limit=5`);
    expect(response.json().workspaces).toHaveLength(5);
    expect(response.json().next_cursor).toBeNull();
  });

  it.each([
    ['workspaces', `${ACME}/workspaces`],
    ['event types', `${ACME}/event-types`],
    ['tokens', `${ACME}/tokens`],
    ['metric definitions', `${ACME}/metric-definitions`],
    ['tenants', '/v1/operator/tenants'],
    ['identifier types', `${ACME}/identifier-types`],
  ])(
    'refuses a cursor it did not hand out for %s (422), and a limit out of range',
    async (_name, url) => {
      const token = url.startsWith('/v1/operator') ? operator : tokens.tenant;
      const segmentCursor = Buffer.from(JSON.stringify({ w: 'eu', s: 'x' })).toString('base64url');
      const badTime = Buffer.from(JSON.stringify({ c: 'yesterday', t: 'tok_1' })).toString(
        'base64url',
      );
      for (const cursor of ['not-a-cursor', segmentCursor, badTime, '__proto__']) {
        const response = await call(env.app, token, 'GET', `${url}?cursor=${cursor}`);
        expect(response.statusCode, cursor).toBe(422);
        expect(response.json().error.code).toBe('validation_failed');
        expect(response.json().error.message).toMatch(/^cursor: /);
      }
      for (const limit of ['0', '501', 'many']) {
        const response = await call(env.app, token, 'GET', `${url}?limit=${limit}`);
        expect(response.statusCode, limit).toBe(422);
      }
    },
  );
});

describe('paged webhook outbox', () => {
  it('pages the operator’s webhook list newest first, visiting each once', async () => {
    const outer = env;
    // Nothing is sent: the sender is not started, so the deliveries stay pending in the outbox.
    env = await openTestEnv({
      collector: true,
      config: { webhook_url: 'http://127.0.0.1:9/unused', webhook_secret: 'whsec_dGVzdA==' },
    });
    try {
      const own = await seedTenants(env.context);
      const operatorOfOwn = operatorToken(env.context.dataDir.masterKey);
      await registerEventTypes(env, own.tenant);
      await call(env.app, own.tenant, 'PUT', `${ACME}/metric-definitions`, {
        metric_name: 'orders',
        event_name: 'order_completed',
        value_kind: 'count',
      });
      const segment = await call(env.app, own.tenant, 'PUT', `${ACME}/segments/buyers`, {
        workspace_id: 'eu',
        display_name: 'buyers',
        predicate: { metric: 'orders', op: 'gte', value: 1 },
      });
      expect(segment.statusCode, segment.body).toBe(201);
      // Two batches a minute apart: some deliveries share created_at, some do not.
      for (const emails of [
        ['a', 'b', 'c'],
        ['d', 'e'],
      ]) {
        const events = emails.map((email) =>
          envelope({
            name: 'order_completed',
            identifiers: { email: `${email}@shop.test` },
            properties: { order_id: email },
          }),
        );
        expect((await sendServer(env, own.collector, events)).statusCode).toBe(202);
        await env.ingest();
        env.clock.advance(60_000);
      }
      const paged = await walk(operatorOfOwn, '/v1/operator/webhooks?status=pending', 'webhooks');
      const whole = (await call(env.app, operatorOfOwn, 'GET', '/v1/operator/webhooks')).json();
      expect(whole.webhooks).toHaveLength(5);
      expect(paged.items).toEqual(whole.webhooks);
      expect(paged.pages).toBe(3);
      const bad = await call(env.app, operatorOfOwn, 'GET', '/v1/operator/webhooks?cursor=nope');
      expect(bad.statusCode).toBe(422);
    } finally {
      await env.close();
      env = outer;
    }
  });
});
