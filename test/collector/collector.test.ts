import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes, sendBrowser, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';

const SHOP = 'https://shop.acme.test';

describe('collector endpoints', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({
      collector: true,
      config: { cors_origins: JSON.stringify({ acme: [SHOP] }) },
    }));
  });
  afterEach(() => env.close());

  const browserSingle = (body: unknown, headers: Record<string, string> = {}) =>
    env.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu', ...headers },
      payload: body as object,
    });

  /** A batch body sent as written, JSON or not. */
  const rawBatch = (payload: string) =>
    env.app.inject({
      method: 'POST',
      url: '/v1/events/batch',
      headers: {
        'x-tenant-id': 'acme',
        'x-workspace-id': 'eu',
        'content-type': 'application/json',
      },
      payload,
    });

  describe('POST /v1/events', () => {
    it('accepts a browser event (202) once it is on disk', async () => {
      const response = await browserSingle(envelope({ anon: 'v1' }));
      expect(response.statusCode).toBe(202);
      expect(response.json()).toEqual({ accepted: 1 });
    });

    it.each([
      ['no anon_id', envelope(), 'anon_id'],
      [
        'a bad envelop_version',
        { ...envelope({ anon: 'v' }), envelop_version: '2.0' },
        'envelop_version',
      ],
      ['no id', { ...envelope({ anon: 'v' }), id: undefined }, 'id'],
      ['a bad occured_at', envelope({ anon: 'v', at: 'yesterday' }), 'occured_at'],
      ['an anon_id that is not a cookie', { ...envelope(), anon_id: 'v1' }, 'anon_id'],
      ['an unknown event name', envelope({ anon: 'v', name: 'checkout_started' }), 'name'],
      [
        'another workspace than the header',
        envelope({ anon: 'v', workspace: 'us' }),
        'workspace_id',
      ],
      ['another tenant than the header', envelope({ anon: 'v', tenant: 'globex' }), 'tenant_id'],
    ])('refuses an event with %s (422 naming %s)', async (_case, body, field) => {
      const response = await browserSingle(body);
      expect(response.statusCode).toBe(422);
      expect(
        response.json().error.message.startsWith(`${field}:`),
        response.json().error.message,
      ).toBe(true);
    });

    it('requires the tenant and workspace headers (422) and existing ones (404)', async () => {
      const bare = await env.app.inject({
        method: 'POST',
        url: '/v1/events',
        payload: envelope({ anon: 'v' }),
      });
      expect(bare.statusCode).toBe(422);
      expect(bare.json().error.message).toBe(
        'headers.x-tenant-id: is required (or query tenant_id)',
      );
      expect(
        (await browserSingle(envelope({ anon: 'v' }), { 'x-workspace-id': 'apac' })).statusCode,
      ).toBe(404);
    });

    it('refuses an event over 32 KiB with 413', async () => {
      const response = await browserSingle(
        envelope({ anon: 'v', properties: { blob: 'x'.repeat(33 * 1024) } }),
      );
      expect(response.statusCode).toBe(413);
    });

    it('accepts a newly registered event type at once', async () => {
      expect((await browserSingle(envelope({ anon: 'v', name: 'cart_viewed' }))).statusCode).toBe(
        422,
      );
      await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/event-types/cart_viewed', {});
      expect((await browserSingle(envelope({ anon: 'v', name: 'cart_viewed' }))).statusCode).toBe(
        202,
      );
    });
  });

  describe('POST /v1/events/batch', () => {
    it('accepts the good events and lists the bad ones by index', async () => {
      const response = await sendBrowser(env, [
        envelope({ anon: 'a' }),
        envelope({ name: 'nope', anon: 'b' }),
        envelope({ anon: 'c' }),
        envelope(),
      ]);
      expect(response.statusCode).toBe(202);
      expect(response.json()).toEqual({
        accepted: 2,
        rejected: [
          {
            index: 1,
            code: 'unknown_event_type',
            message: 'name: event type nope is not registered',
          },
          {
            index: 3,
            code: 'invalid_event',
            message: 'anon_id: Invalid input: expected string, received undefined',
          },
        ],
      });
      await env.ingest();
      const stored = await env.context.store.read((s) =>
        s.allText<{ n: number }>('SELECT count(*) AS n FROM events'),
      );
      expect(stored[0]?.n).toBe(2);
    });

    it('refuses more than 1,000 events (413) and more than 1 MiB (413)', async () => {
      const many = Array.from({ length: 1001 }, () => envelope({ anon: 'a' }));
      expect((await sendBrowser(env, many)).statusCode).toBe(413);
      const big = Array.from({ length: 40 }, () =>
        envelope({ anon: 'a', properties: { blob: 'x'.repeat(30_000) } }),
      );
      expect((await sendBrowser(env, big)).statusCode).toBe(413);
    });

    it('answers a large batch (checked on worker threads) as it answers a small one', async () => {
      const padding = { note: 'p'.repeat(400) };
      const mixed = (n: number) =>
        Array.from({ length: n }, (_, i) =>
          i % 50 === 7
            ? envelope({ anon: `v${i}`, name: 'nope', properties: padding })
            : i % 50 === 9
              ? envelope({ anon: `v${i}`, workspace: 'us', properties: padding })
              : envelope({ anon: `v${i}`, properties: { ...padding, i } }),
        );
      const small = mixed(40);
      const large = mixed(400);
      expect(JSON.stringify({ events: small }).length).toBeLessThan(64 * 1024);
      expect(JSON.stringify({ events: large }).length).toBeGreaterThan(64 * 1024);

      const smallAnswer = (await sendBrowser(env, small)).json();
      const largeResponse = await sendBrowser(env, large);
      expect(largeResponse.statusCode).toBe(202);
      const largeAnswer = largeResponse.json();
      expect(largeAnswer.accepted).toBe(384);
      expect(largeAnswer.rejected).toHaveLength(16);
      expect(largeAnswer.rejected.slice(0, 2)).toEqual([
        {
          index: 7,
          code: 'unknown_event_type',
          message: 'name: event type nope is not registered',
        },
        {
          index: 9,
          code: 'workspace_mismatch',
          message: 'workspace_id: us is not the workspace of this request',
        },
      ]);
      expect(smallAnswer.rejected).toEqual(largeAnswer.rejected.slice(0, 2));

      await env.ingest();
      const stored = await env.context.store.read((s) =>
        s.allText<{ n: number; first: number; last: number }>(
          `SELECT count(*) AS n, min((properties->>'i')::INTEGER) AS first, max((properties->>'i')::INTEGER) AS last
           FROM events`,
        ),
      );
      expect(stored[0]).toEqual({ n: 38 + 384, first: 0, last: 399 });
    });

    it.each([
      ['a small', 10],
      ['a large', 2000],
    ])('answers %s body that is not JSON with 400, and an empty one too', async (_size, n) => {
      const response = await rawBatch(`{"events": [${'{"a": 1},'.repeat(n)}`);
      expect(response.statusCode).toBe(400);
      expect(response.json().error.message).toMatch(/^the body is not valid JSON: /);
      const empty = await rawBatch('');
      expect(empty.statusCode).toBe(400);
      expect(empty.json().error.message).toBe('the JSON body is empty');
    });

    it('refuses a large body whose events are not an array (422), and prototype keys (400)', async () => {
      const notArray = await rawBatch(JSON.stringify({ events: { many: 'x'.repeat(70_000) } }));
      expect(notArray.statusCode).toBe(422);
      expect(notArray.json().error.message).toBe('events: must be an array of events');
      const poisoned = await rawBatch(
        `{"events": [], "__proto__": {"x": "${'y'.repeat(70_000)}"}}`,
      );
      expect(poisoned.statusCode).toBe(400);
    });

    it('refuses a body without an events array (422)', async () => {
      const response = await rawBatch(JSON.stringify({ event: [] }));
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toMatch(/^events:/);
    });
  });

  describe('server events', () => {
    it('takes a collector token; none is 401, a control-plane token 403, a revoked one 401', async () => {
      expect(
        (
          await sendServer(env, tokens.collector, [
            envelope({ identifiers: { email: 'a@b.test' } }),
          ])
        ).statusCode,
      ).toBe(202);
      const none = await env.app.inject({
        method: 'POST',
        url: '/v1/server/events',
        payload: envelope(),
      });
      expect(none.statusCode).toBe(401);
      expect(
        (await call(env.app, tokens.tenant, 'POST', '/v1/server/events', envelope())).statusCode,
      ).toBe(403);
      const whoami = (await call(env.app, tokens.collector, 'GET', '/v1/whoami')).json();
      await call(env.app, tokens.tenant, 'DELETE', `/v1/tenants/acme/tokens/${whoami.token_id}`);
      expect((await sendServer(env, tokens.collector, [envelope()])).statusCode).toBe(401);
    });

    it('refuses a single event of another tenant with 403', async () => {
      const response = await call(
        env.app,
        tokens.collector,
        'POST',
        '/v1/server/events',
        envelope({ tenant: 'globex' }),
      );
      expect(response.statusCode).toBe(403);
    });

    it('keeps a workspace-bound collector token to its workspace', async () => {
      const minted = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
        kind: 'collector',
        workspace_id: 'eu',
        name: 'eu backend',
      });
      const response = await sendServer(env, minted.json().token, [
        envelope({ identifiers: { email: 'a@b.test' } }),
        envelope({ workspace: 'us', identifiers: { email: 'a@b.test' } }),
      ]);
      expect(response.json()).toMatchObject({
        accepted: 1,
        rejected: [{ index: 1, code: 'workspace_mismatch' }],
      });
    });
  });

  describe('CORS', () => {
    const preflight = (origin: string, url = '/v1/events') =>
      env.app.inject({
        method: 'OPTIONS',
        url,
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type,x-tenant-id,x-workspace-id',
        },
      });

    it('answers the preflight for a configured origin, on both browser paths', async () => {
      for (const url of ['/v1/events', '/v1/events/batch']) {
        const response = await preflight(SHOP, url);
        expect(response.statusCode).toBe(204);
        expect(response.headers['access-control-allow-origin']).toBe(SHOP);
        expect(String(response.headers['access-control-allow-headers'])).toContain('x-tenant-id');
      }
    });

    it('gives no CORS grant to another origin, and refuses its preflight and events with 403', async () => {
      const refusal = {
        error: {
          code: 'origin_not_allowed',
          message: expect.stringContaining('origin https://evil.test may not send events'),
          details: { origin: 'https://evil.test' },
        },
      };
      const refusedPreflight = await preflight('https://evil.test');
      expect(refusedPreflight.statusCode).toBe(403);
      expect(refusedPreflight.json()).toEqual(refusal);
      expect(refusedPreflight.headers['access-control-allow-origin']).toBeUndefined();
      const response = await browserSingle(envelope({ anon: 'v' }), {
        origin: 'https://evil.test',
      });
      expect(response.statusCode).toBe(403);
      expect(response.json()).toEqual(refusal);
      const allowed = await browserSingle(envelope({ anon: 'v' }), { origin: SHOP });
      expect(allowed.statusCode).toBe(202);
      expect(allowed.headers['access-control-allow-origin']).toBe(SHOP);
    });
  });
});

describe('collector rate limit', () => {
  it('answers 429 with retry-after once a tenant passes its limit', async () => {
    const env = await openTestEnv({ collector: true, config: { collector_rate_limit: 3 } });
    try {
      const tokens = await seedTenants(env.context);
      await registerEventTypes(env, tokens.tenant);
      const statuses: number[] = [];
      let last = null;
      for (let i = 0; i < 5; i += 1) {
        last = await sendBrowser(env, [envelope({ anon: 'a' })]);
        statuses.push(last.statusCode);
      }
      expect(statuses).toEqual([202, 202, 202, 429, 429]);
      // The limit counts per second, so a refused request may retry within the next one.
      expect(last?.headers['retry-after']).toBe('1');
      expect(last?.json().error.code).toBe('rate_limited');
      const otherTenant = await sendBrowser(env, [envelope({ anon: 'a', tenant: 'globex' })], {
        tenant: 'globex',
      });
      expect(otherTenant.statusCode).not.toBe(429);
    } finally {
      await env.close();
    }
  });
});
