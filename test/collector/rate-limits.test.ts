import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes, sendBrowser, sendServer } from '../helpers/events.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';

let env: TestEnv;
afterEach(() => env.close());

async function openLimited(config: Record<string, number>): Promise<Tokens> {
  env = await openTestEnv({ collector: true, config });
  const tokens = await seedTenants(env.context);
  await registerEventTypes(env, tokens.tenant);
  await registerEventTypes(env, tokens.otherTenant, 'globex');
  // The setup above spent control-plane budget; every test starts on a fresh window.
  env.clock.advance(1000);
  return tokens;
}

async function statusesOf(
  count: number,
  send: (index: number) => Promise<LightMyRequestResponse>,
): Promise<number[]> {
  const statuses: number[] = [];
  for (let index = 0; index < count; index += 1) statuses.push((await send(index)).statusCode);
  return statuses;
}

/** A browser request with the headers exactly as given. */
function browserWith(headers: Record<string, string>, event = envelope({ anon: 'a' })) {
  return env.app.inject({ method: 'POST', url: '/v1/events', headers, payload: event });
}

describe('collector rate limits', () => {
  it('never lets requests naming a tenant it cannot vouch for spend that tenant’s budget', async () => {
    await openLimited({ collector_rate_limit: 3, refused_rate_limit: 2 });
    const spoofed = await statusesOf(5, (index) =>
      browserWith({ 'x-tenant-id': 'globex', 'x-workspace-id': `missing-${index}` }),
    );
    expect(spoofed).toEqual([404, 404, 429, 429, 429]);
    const unknownTenant = await browserWith({ 'x-tenant-id': 'nobody', 'x-workspace-id': 'eu' });
    expect(unknownTenant.statusCode).toBe(429);
    expect(unknownTenant.json().error.code).toBe('rate_limited');

    // globex's own browsers still have their whole budget, whatever was sent in its name.
    const globex = await statusesOf(4, () =>
      sendBrowser(env, [envelope({ anon: 'g', tenant: 'globex' })], { tenant: 'globex' }),
    );
    expect(globex).toEqual([202, 202, 202, 429]);
  });

  it('counts each workspace of a tenant apart, and browser requests apart from tokens', async () => {
    const tokens = await openLimited({ collector_rate_limit: 3 });
    expect(await statusesOf(4, () => sendBrowser(env, [envelope({ anon: 'a' })]))).toEqual([
      202, 202, 202, 429,
    ]);
    const us = await sendBrowser(env, [envelope({ anon: 'a', workspace: 'us' })], {
      workspace: 'us',
    });
    expect(us.statusCode).toBe(202);
    expect((await sendServer(env, tokens.collector, [envelope()])).statusCode).toBe(202);
    // The single and batch endpoints share one budget.
    const single = await browserWith({ 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' });
    expect(single.statusCode).toBe(429);
  });

  it('refuses prototype-named tenants as unknown (404) and keeps counting real ones', async () => {
    await openLimited({ collector_rate_limit: 3 });
    for (const name of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      for (const [tenant, workspace] of [
        [name, 'eu'],
        ['acme', name],
      ] as const) {
        const response = await browserWith({ 'x-tenant-id': tenant, 'x-workspace-id': workspace });
        expect(response.statusCode, `${tenant}/${workspace}`).toBe(404);
        expect(response.json().error.code).toBe('not_found');
      }
    }
    expect(await statusesOf(4, () => sendBrowser(env, [envelope({ anon: 'a' })]))).toEqual([
      202, 202, 202, 429,
    ]);
  });

  it('counts server requests by their token, whatever tenant header they carry', async () => {
    const tokens = await openLimited({ collector_rate_limit: 3 });
    const sent = await statusesOf(5, (index) =>
      env.app.inject({
        method: 'POST',
        url: '/v1/server/events/batch',
        headers: {
          authorization: `Bearer ${tokens.collector}`,
          'x-tenant-id': `random-${index}-${Math.random().toString(36).slice(2)}`,
          'x-workspace-id': `w${index}`,
        },
        payload: { events: [envelope()] },
      }),
    );
    expect(sent).toEqual([202, 202, 202, 429, 429]);
    const refused = await sendServer(env, tokens.collector, [envelope()]);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json().error.code).toBe('rate_limited');

    // Another token of the same tenant has its own budget; the first gets its back a second later.
    const second = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
      kind: 'collector',
      name: 'second backend',
    });
    expect((await sendServer(env, second.json().token, [envelope()])).statusCode).toBe(202);
    env.clock.advance(1000);
    expect((await sendServer(env, tokens.collector, [envelope()])).statusCode).toBe(202);
  });

  it('bounds requests with bad tokens per address, without touching a good token’s budget', async () => {
    const tokens = await openLimited({ collector_rate_limit: 3, refused_rate_limit: 2 });
    const bad = await statusesOf(4, (index) =>
      sendServer(env, `cpc_${'x'.repeat(20 + index)}`, [envelope()]),
    );
    expect(bad).toEqual([401, 401, 429, 429]);
    expect(await statusesOf(4, () => sendServer(env, tokens.collector, [envelope()]))).toEqual([
      202, 202, 202, 429,
    ]);
  });
});

describe('control-plane rate limit', () => {
  it('answers 429 with retry-after per token, leaving other tokens alone', async () => {
    const tokens = await openLimited({ control_plane_rate_limit: 3 });
    const list = (token: string) => call(env.app, token, 'GET', '/v1/tenants/acme/workspaces');
    expect(await statusesOf(4, () => list(tokens.tenant))).toEqual([200, 200, 200, 429]);
    const refused = await list(tokens.tenant);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toEqual({
      error: { code: 'rate_limited', message: expect.stringContaining('retry after 1 s') },
    });

    const reader = await call(env.app, tokens.workspace, 'GET', '/v1/tenants/acme/workspaces/eu');
    expect(reader.statusCode).toBe(200);
    expect((await list(tokens.otherTenant)).statusCode).toBe(403);

    env.clock.advance(1000);
    expect((await list(tokens.tenant)).statusCode).toBe(200);
  });

  it('counts requests a token may not make against that token', async () => {
    const tokens = await openLimited({ control_plane_rate_limit: 2 });
    const probe = () => call(env.app, tokens.otherTenant, 'GET', '/v1/tenants/acme/workspaces');
    expect(await statusesOf(3, probe)).toEqual([403, 403, 429]);
  });

  it('bounds unauthenticated requests per address before looking their token up', async () => {
    const tokens = await openLimited({ refused_rate_limit: 3 });
    const sent = await statusesOf(5, (index) =>
      call(
        env.app,
        index === 0 ? null : `cpt_${'y'.repeat(24 + index)}`,
        'GET',
        '/v1/tenants/acme/workspaces',
      ),
    );
    expect(sent).toEqual([401, 401, 401, 429, 429]);
    // A good token from that address waits out the window too, then is served.
    expect(
      (await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/workspaces')).statusCode,
    ).toBe(429);
    env.clock.advance(1000);
    expect(
      (await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/workspaces')).statusCode,
    ).toBe(200);
  });
});
