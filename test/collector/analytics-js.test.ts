import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const SHOP = 'https://shop.example';
const OTHER_SHOP = 'https://other.example';

let env: TestEnv;
let tokens: Tokens;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv({ collector: true }));
  for (const [workspace, origin] of [
    ['eu', SHOP],
    ['us', OTHER_SHOP],
  ] as const) {
    const set = await call(
      env.app,
      tokens.tenant,
      'PUT',
      `/v1/tenants/acme/workspaces/${workspace}`,
      {
        allowed_origins: [origin],
      },
    );
    expect(set.statusCode, set.body).toBe(200);
  }
  // analytics.js calls are events named by their call, registered as any event type.
  for (const name of ['page', 'identify']) {
    const registered = await call(
      env.app,
      tokens.tenant,
      'PUT',
      `/v1/tenants/acme/event-types/${name}`,
      {},
    );
    expect(registered.statusCode, registered.body).toBeLessThan(300);
  }
});
afterEach(() => env.close());

const mintWriteKey = async (workspace = 'eu') => {
  const minted = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
    kind: 'write_key',
    workspace_id: workspace,
    name: `site of ${workspace}`,
  });
  expect(minted.statusCode, minted.body).toBe(201);
  return minted.json() as { token: string; token_id: string };
};

const revoke = async (tokenId: string) => {
  const revoked = await call(
    env.app,
    tokens.tenant,
    'DELETE',
    `/v1/tenants/acme/tokens/${tokenId}`,
  );
  expect(revoked.statusCode, revoked.body).toBeLessThan(300);
};

const basic = (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`;

/** A batch as analytics.js sends it: text/plain JSON, the key as Basic auth and in the body. */
const sendBatch = (key: string, batch: unknown[], origin = SHOP) =>
  env.app.inject({
    method: 'POST',
    url: '/v1/b',
    headers: { 'content-type': 'text/plain', authorization: basic(key), origin },
    payload: JSON.stringify({ writeKey: key, batch, sentAt: '2026-03-01T11:59:59.000Z' }),
  });

const messages = (anonymousId: string) => [
  {
    type: 'page',
    anonymousId,
    name: 'Home',
    properties: { path: '/' },
    messageId: `${anonymousId}-1`,
  },
  {
    type: 'identify',
    anonymousId,
    userId: 'u-42',
    traits: { email: 'ann@shop.example', plan: 'gold' },
    messageId: `${anonymousId}-2`,
  },
  {
    type: 'track',
    anonymousId,
    event: 'product_viewed',
    properties: { sku: 's1' },
    messageId: `${anonymousId}-3`,
  },
];

/**
 * The names of the stored events of workspace eu's one profile, which browser trust keeps apart
 * from ann@shop.example: the email the messages carried is not an identifier of it.
 */
const eventsOfTheOneProfile = async () => {
  const byEmail = await call(
    env.app,
    tokens.tenant,
    'GET',
    '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=ann@shop.example',
  );
  expect(byEmail.statusCode, 'browser trust drops the email').toBe(404);
  const people = (
    await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/workspaces/eu/profiles/summary')
  ).json().profiles as { profile_id: string }[];
  expect(people).toHaveLength(1);
  const history = (
    await call(
      env.app,
      tokens.tenant,
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/${people[0]?.profile_id}/history`,
    )
  ).json().entries as { event_name: string }[];
  return history.map((entry) => entry.event_name).sort();
};

describe('browser write keys and the analytics.js endpoints (issue 39)', () => {
  it('takes a batch from an allowed page at browser trust: one profile by the cookie, the email dropped', async () => {
    const { token: key } = await mintWriteKey();
    const answer = await sendBatch(key, messages('anon-1'));
    expect(answer.statusCode, answer.body).toBe(200);
    expect(answer.json()).toMatchObject({ success: true, accepted: 3, rejected: [] });
    expect(answer.headers['access-control-allow-origin']).toBe(SHOP);
    await env.ingest();

    expect(await eventsOfTheOneProfile()).toEqual(['identify', 'page', 'product_viewed']);
    const us = await call(
      env.app,
      tokens.tenant,
      'GET',
      '/v1/tenants/acme/workspaces/us/profiles/summary',
    );
    expect(us.json().profiles, 'the key names the workspace').toEqual([]);
  });

  it('takes single calls with the key in the body, and drops the library metrics', async () => {
    const { token: key } = await mintWriteKey();
    for (const [path, message] of [
      ['/v1/p', { anonymousId: 'anon-2', name: 'Home', writeKey: key }],
      ['/v1/t', { anonymousId: 'anon-2', event: 'signed_up', writeKey: key }],
    ] as const) {
      const answer = await env.app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'text/plain', origin: SHOP },
        payload: JSON.stringify(message),
      });
      expect(answer.statusCode, answer.body).toBe(200);
    }
    const metrics = await env.app.inject({
      method: 'POST',
      url: '/v1/m',
      payload: '{"series":[]}',
    });
    expect(metrics.statusCode).toBe(200);
  });

  it('refuses another origin, a revoked key, an API token and a key of another workspace’s origin', async () => {
    const eu = await mintWriteKey('eu');
    const wrongOrigin = await sendBatch(eu.token, messages('a'), OTHER_SHOP);
    expect(wrongOrigin.statusCode).toBe(403);
    expect(wrongOrigin.json().error.code).toBe('origin_not_allowed');
    const apiToken = await sendBatch(tokens.tenant, messages('a'));
    expect(apiToken.statusCode).toBe(403);
    const collector = await sendBatch(tokens.collector, messages('a'));
    expect(collector.statusCode).toBe(403);
    await revoke(eu.token_id);
    const revoked = await sendBatch(eu.token, messages('a'));
    expect(revoked.statusCode).toBe(401);
    const settings = await env.app.inject({
      method: 'GET',
      url: `/v1/projects/${eu.token}/settings`,
    });
    expect(settings.statusCode).toBe(404);
    await env.ingest();
    const stored = await call(
      env.app,
      tokens.tenant,
      'GET',
      '/v1/tenants/acme/workspaces/eu/profiles/summary',
    );
    expect(stored.json().profiles, 'nothing refused was kept').toEqual([]);
  });

  it("answers RudderStack's browser SDK: its source config, and its messages on the Tracking API's routes at browser trust, from allowed pages only", async () => {
    const eu = await mintWriteKey('eu');
    const config = await env.app.inject({
      method: 'GET',
      url: `/sourceConfig/?p=npm&v=3.34.1&build=modern&writeKey=${eu.token}`,
      headers: { authorization: basic(eu.token), origin: SHOP },
    });
    expect(config.statusCode, config.body).toBe(200);
    expect(config.headers['access-control-allow-origin']).toBe(SHOP);
    expect(config.json()).toEqual({
      isHosted: false,
      source: {
        id: eu.token_id,
        name: 'eu',
        writeKey: eu.token,
        workspaceId: 'acme/eu',
        enabled: true,
        config: { statsCollection: { errors: { enabled: false }, metrics: { enabled: false } } },
        destinations: [],
      },
    });
    const fromElsewhere = await env.app.inject({
      method: 'GET',
      url: `/sourceConfig/?writeKey=${eu.token}`,
      headers: { origin: OTHER_SHOP },
    });
    expect(fromElsewhere.statusCode).toBe(403);

    // As the SDK sends: JSON, the key as Basic auth, its own headers; a batch and a single call.
    const rudder = (path: string, body: unknown, key = eu.token, origin = SHOP) =>
      env.app.inject({
        method: 'POST',
        url: path,
        headers: {
          'content-type': 'application/json;charset=UTF-8',
          authorization: basic(key),
          anonymousid: Buffer.from('rs-anon').toString('base64'),
          origin,
        },
        payload: JSON.stringify(body),
      });
    const batch = await rudder('/v1/batch', {
      batch: messages('rs-anon').map((message) => ({ ...message, channel: 'web' })),
      sentAt: '2026-03-01T11:59:59.000Z',
    });
    expect(batch.statusCode, batch.body).toBe(200);
    expect(batch.json()).toMatchObject({ accepted: 3, rejected: [] });
    expect(batch.headers['access-control-allow-origin']).toBe(SHOP);
    const single = await rudder('/v1/track', {
      type: 'track',
      anonymousId: 'rs-anon',
      event: 'signed_up',
      messageId: 'rs-anon-4',
      context: { traits: { email: 'ann@shop.example' } },
    });
    expect(single.statusCode, single.body).toBe(200);
    expect((await rudder('/v1/track', {}, eu.token, OTHER_SHOP)).statusCode).toBe(403);
    await env.ingest();

    expect(await eventsOfTheOneProfile()).toEqual([
      'identify',
      'page',
      'product_viewed',
      'signed_up',
    ]);

    await revoke(eu.token_id);
    expect((await rudder('/v1/batch', { batch: messages('late') })).statusCode).toBe(401);
    const revokedConfig = await env.app.inject({
      method: 'GET',
      url: `/sourceConfig/?writeKey=${eu.token}`,
    });
    expect(revokedConfig.statusCode).toBe(401);
  });

  it('never reads: a write key is refused by every API route', async () => {
    const { token: key } = await mintWriteKey();
    for (const path of [
      '/v1/tenants/acme/segments?workspace_id=eu',
      '/v1/tenants/acme/workspaces/eu/profiles/summary',
    ]) {
      const answer = await call(env.app, key, 'GET', path);
      expect(answer.statusCode, path).toBe(403);
    }
    const whoami = await call(env.app, key, 'GET', '/v1/whoami');
    expect(whoami.json()).toMatchObject({ kind: 'write_key', can_read: [], can_write: false });
  });

  it('answers a preflight for an allowed origin with the headers analytics.js sends, and refuses another', async () => {
    const preflight = (origin: string) =>
      env.app.inject({
        method: 'OPTIONS',
        url: '/v1/b',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'authorization,content-type,x-retry-count',
        },
      });
    const allowed = await preflight(SHOP);
    expect(allowed.statusCode).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe(SHOP);
    expect(String(allowed.headers['access-control-allow-headers']).split(/,\s*/)).toEqual(
      expect.arrayContaining(['authorization', 'content-type', 'x-retry-count']),
    );
    expect(allowed.headers['access-control-expose-headers']).toBe('retry-after');
    expect((await preflight('https://elsewhere.example')).statusCode).toBe(403);
  });

  it('serves the settings and the library from the npm package, pointed at this cds and nowhere else', async () => {
    const { token: key } = await mintWriteKey();
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/workspaces/eu', {
      consent_categories: ['marketing'],
    });
    const settings = await env.app.inject({
      method: 'GET',
      url: `/v1/projects/${key}/settings`,
      headers: { host: 'cds.example:8443', origin: SHOP },
    });
    expect(settings.statusCode, settings.body).toBe(200);

    expect(settings.headers['access-control-allow-origin']).toBe(SHOP);
    const document = settings.json();
    expect(Object.keys(document.integrations)).toEqual(['Segment.io']);
    expect(document.integrations['Segment.io']).toMatchObject({
      apiKey: key,
      apiHost: 'cds.example:8443/v1',
      deliveryStrategy: { strategy: 'batching' },
    });
    expect(document.metrics.sampleRate).toBe(0);
    expect(document.consentSettings).toEqual({
      allCategories: ['marketing'],
      hasUnmappedDestinations: true,
    });
    expect(JSON.stringify(document)).not.toMatch(/segment\.(com|io)/);

    const library = await env.app.inject({
      method: 'GET',
      url: `/analytics.js/v1/${key}/analytics.min.js`,
      headers: { host: 'cds.example:8443' },
    });
    expect(library.statusCode, library.body.slice(0, 300)).toBe(200);
    expect(library.headers['content-type']).toContain('javascript');
    expect(library.body).toContain('http://cds.example:8443/analytics-next/bundles/');
    expect(library.body).not.toMatch(/cdn\.segment\.com|api\.segment\.io/);
    const chunk = /(?:^| )([A-Za-z0-9_-]+\.bundle\.[0-9a-f]+\.js)(?= |$)/.exec(
      (await import('node:fs'))
        .readdirSync('node_modules/@segment/analytics-next/dist/umd')
        .join(' '),
    )?.[1];
    expect(
      (await env.app.inject({ method: 'GET', url: `/analytics-next/bundles/${chunk}` })).statusCode,
    ).toBe(200);
    for (const url of [
      '/analytics-next/bundles/..%2F..%2Fpackage.json',
      '/analytics-next/bundles/index.js',
      `/analytics.js/v1/${tokens.collector}/analytics.min.js`,
      `/v1/projects/${tokens.tenant}/settings`,
    ])
      expect((await env.app.inject({ method: 'GET', url })).statusCode, url).toBe(404);
    const hostile = await env.app.inject({
      method: 'GET',
      url: `/v1/projects/${key}/settings`,
      headers: { host: 'cds.example"><script>' },
    });
    expect(hostile.statusCode).toBe(400);
  });
});
