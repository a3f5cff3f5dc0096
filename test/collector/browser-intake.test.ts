import { deflateSync, gzipSync } from 'node:zlib';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { envelope } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

/** The operator's default origin for tenant acme; workspaces add their own through the API. */
const OPERATOR_ORIGIN = 'https://operator.acme.test';

let env: TestEnv;
let tokens: Tokens;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv({
    collector: true,
    config: { cors_origins: JSON.stringify({ acme: [OPERATOR_ORIGIN] }) },
  }));
});
afterEach(() => env.close());

const putWorkspace = (workspace: string, body: unknown) =>
  call(env.app, tokens.tenant, 'PUT', `/v1/tenants/acme/workspaces/${workspace}`, body);

/** What a page sends with `navigator.sendBeacon(url, text)`: no custom header, a text body. */
const beacon = (url: string, body: unknown, origin?: string) =>
  env.app.inject({
    method: 'POST',
    url,
    headers: {
      'content-type': 'text/plain;charset=UTF-8',
      ...(origin ? { origin } : {}),
    },
    payload: JSON.stringify(body),
  });

const preflight = (url: string, origin: string) =>
  env.app.inject({
    method: 'OPTIONS',
    url,
    headers: { origin, 'access-control-request-method': 'POST' },
  });

/** Events stored for tenant acme after an ingest pass, by id. */
async function storedIds(): Promise<string[]> {
  await env.ingest();
  const rows = await env.context.store.read((session) =>
    session.allText<{ event_id: string }>(
      "SELECT event_id FROM events WHERE tenant_id = 'acme' ORDER BY event_id",
    ),
  );
  return rows.map((row) => row.event_id);
}

describe('beacons: tenant and workspace in the query, JSON as text/plain', () => {
  it('takes a batch and a single event without any header, and stores them', async () => {
    const batched = envelope({ anon: 'visitor-1' });
    const single = envelope({ anon: 'visitor-1' });
    const batch = await beacon('/v1/events/batch?tenant_id=acme&workspace_id=eu', {
      events: [batched],
    });
    expect(batch.statusCode).toBe(202);
    expect(batch.json()).toEqual({ accepted: 1, rejected: [] });
    const one = await beacon('/v1/events?tenant_id=acme&workspace_id=eu', single);
    expect(one.statusCode).toBe(202);
    expect(one.json()).toEqual({ accepted: 1 });
    expect(await storedIds()).toEqual([batched.id, single.id].sort());
  });

  it('carries the CORS grant for an allowed origin, and needs no preflight to do it', async () => {
    const response = await beacon(
      '/v1/events/batch?tenant_id=acme&workspace_id=eu',
      { events: [envelope({ anon: 'v' })] },
      OPERATOR_ORIGIN,
    );
    expect(response.statusCode).toBe(202);
    expect(response.headers['access-control-allow-origin']).toBe(OPERATOR_ORIGIN);
  });

  it('refuses a text body that is not JSON (400), a query naming what the headers contradict (422), and none (422)', async () => {
    const notJson = await env.app.inject({
      method: 'POST',
      url: '/v1/events?tenant_id=acme&workspace_id=eu',
      headers: { 'content-type': 'text/plain' },
      payload: 'page_viewed',
    });
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().error.code).toBe('bad_request');

    const contradicted = await env.app.inject({
      method: 'POST',
      url: '/v1/events/batch?tenant_id=acme&workspace_id=us',
      headers: { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' },
      payload: { events: [envelope({ anon: 'v' })] },
    });
    expect(contradicted.statusCode).toBe(422);
    expect(contradicted.json().error.message).toBe(
      'query.workspace_id: differs from the x-workspace-id header',
    );

    const twice = await beacon('/v1/events/batch?tenant_id=acme&tenant_id=acme&workspace_id=eu', {
      events: [],
    });
    expect(twice.statusCode).toBe(422);

    const unnamed = await beacon('/v1/events/batch', { events: [envelope({ anon: 'v' })] });
    expect(unnamed.statusCode).toBe(422);
    expect(await storedIds()).toEqual([]);
  });

  it('still refuses text bodies on the server endpoints and the control plane (415)', async () => {
    const server = await env.app.inject({
      method: 'POST',
      url: '/v1/server/events/batch',
      headers: { authorization: `Bearer ${tokens.collector}`, 'content-type': 'text/plain' },
      payload: JSON.stringify({ events: [envelope({ anon: 'v' })] }),
    });
    expect(server.statusCode).toBe(415);
    const control = await env.app.inject({
      method: 'PUT',
      url: '/v1/tenants/acme/workspaces/eu',
      headers: { authorization: `Bearer ${tokens.tenant}`, 'content-type': 'text/plain' },
      payload: '{}',
    });
    expect(control.statusCode).toBe(415);
  });
});

describe('allowed origins per workspace', () => {
  it('are set, normalised, shown and kept by a PUT that leaves them out; an empty list clears them', async () => {
    const set = await putWorkspace('eu', {
      display_name: 'Europe',
      allowed_origins: [
        'https://Shop.Example.com',
        'https://*.example.com',
        'http://127.0.0.1:5173',
      ],
    });
    expect(set.statusCode).toBe(200);
    expect(set.json().allowed_origins).toEqual([
      'https://shop.example.com',
      'https://*.example.com',
      'http://127.0.0.1:5173',
    ]);
    const renamed = await putWorkspace('eu', { display_name: 'EU' });
    expect(renamed.json()).toMatchObject({
      display_name: 'EU',
      allowed_origins: [
        'https://shop.example.com',
        'https://*.example.com',
        'http://127.0.0.1:5173',
      ],
    });
    const listed = await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/workspaces');
    expect(listed.json().workspaces[0].allowed_origins).toHaveLength(3);
    const created = await putWorkspace('asia', {});
    expect(created.statusCode).toBe(201);
    expect(created.json().allowed_origins).toEqual([]);
    const cleared = await putWorkspace('eu', { allowed_origins: [] });
    expect(cleared.json().allowed_origins).toEqual([]);
  });

  it.each([
    ['a path', 'https://shop.example.com/checkout'],
    ['a trailing slash', 'https://shop.example.com/'],
    ['no scheme', 'shop.example.com'],
    ['another scheme', 'ftp://shop.example.com'],
    ['a bare star', '*'],
    ['a star inside a label', 'https://shop*.example.com'],
    ['a star past the first label', 'https://shop.*.com'],
  ])('refuses an origin with %s (422, naming it)', async (_what, origin) => {
    const response = await putWorkspace('eu', { allowed_origins: [origin] });
    expect(response.statusCode).toBe(422);
    expect(response.json().error.message).toContain('allowed_origins.0');
  });

  it('refuses more than 100 origins (422)', async () => {
    const origins = Array.from({ length: 101 }, (_, index) => `https://s${index}.example.com`);
    expect((await putWorkspace('eu', { allowed_origins: origins })).statusCode).toBe(422);
  });

  it('let exactly the origins of that workspace send, answering 403 naming any other, preflights too', async () => {
    await putWorkspace('eu', {
      allowed_origins: ['https://shop.example.com', 'https://*.brand.example'],
    });
    const send = (origin: string, workspace = 'eu') =>
      beacon(
        `/v1/events/batch?tenant_id=acme&workspace_id=${workspace}`,
        { events: [envelope({ anon: 'v', workspace })] },
        origin,
      );
    for (const origin of [
      'https://shop.example.com',
      'https://eu.brand.example',
      'https://a.b.brand.example',
      OPERATOR_ORIGIN,
    ]) {
      const response = await send(origin);
      expect(response.statusCode, origin).toBe(202);
      expect(response.headers['access-control-allow-origin']).toBe(origin);
      const allowedPreflight = await preflight(
        '/v1/events/batch?tenant_id=acme&workspace_id=eu',
        origin,
      );
      expect(allowedPreflight.statusCode, origin).toBe(204);
      expect(allowedPreflight.headers['access-control-allow-origin']).toBe(origin);
    }
    for (const origin of [
      'https://brand.example',
      'http://eu.brand.example',
      'https://eu.brand.example:8443',
      'https://shop.example.com.evil.test',
      'https://evil.test/.brand.example',
      'null',
    ]) {
      const response = await send(origin);
      expect(response.statusCode, origin).toBe(403);
      expect(response.json().error).toMatchObject({
        code: 'origin_not_allowed',
        details: { origin },
      });
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
      const refusedPreflight = await preflight(
        '/v1/events/batch?tenant_id=acme&workspace_id=eu',
        origin,
      );
      expect(refusedPreflight.statusCode, origin).toBe(403);
    }
    // Another workspace of the tenant has only the operator's default.
    expect((await send('https://shop.example.com', 'us')).statusCode).toBe(403);
    expect((await send(OPERATOR_ORIGIN, 'us')).statusCode).toBe(202);
  });

  it('answers a preflight that names no workspace for an origin any workspace allows', async () => {
    expect((await preflight('/v1/events', 'https://shop.example.com')).statusCode).toBe(403);
    await putWorkspace('us', { allowed_origins: ['https://shop.example.com'] });
    const allowed = await preflight('/v1/events', 'https://shop.example.com');
    expect(allowed.statusCode).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://shop.example.com');
    // The request itself is checked against its own workspace.
    const elsewhere = await env.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: {
        origin: 'https://shop.example.com',
        'x-tenant-id': 'acme',
        'x-workspace-id': 'eu',
      },
      payload: envelope({ anon: 'v' }),
    });
    expect(elsewhere.statusCode).toBe(403);
  });
});

describe('compressed bodies', () => {
  const batchBody = (events: unknown[]) => Buffer.from(JSON.stringify({ events }));

  const compressed = (url: string, encoding: string, body: Buffer, headers = {}) =>
    env.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/json', 'content-encoding': encoding, ...headers },
      payload: body,
    });

  it('inflates gzip and deflate on the browser and server endpoints, single and batch', async () => {
    const ids: string[] = [];
    const event = (spec: Parameters<typeof envelope>[0]) => {
      const made = envelope(spec);
      ids.push(String(made.id));
      return made;
    };
    const browser = { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' };
    const server = { authorization: `Bearer ${tokens.collector}` };
    const answers = [
      await compressed(
        '/v1/events/batch',
        'gzip',
        gzipSync(batchBody([event({ anon: 'a' })])),
        browser,
      ),
      await compressed(
        '/v1/events',
        'deflate',
        deflateSync(JSON.stringify(event({ anon: 'b' }))),
        browser,
      ),
      await compressed(
        '/v1/server/events/batch',
        'GZIP',
        gzipSync(batchBody([event({ identifiers: { email: 'ana@example.com' } })])),
        server,
      ),
      await compressed(
        '/v1/server/events',
        'deflate',
        deflateSync(JSON.stringify(event({ identifiers: { email: 'bo@example.com' } }))),
        server,
      ),
      await compressed(
        '/v1/events/batch?tenant_id=acme&workspace_id=eu',
        'gzip',
        gzipSync(batchBody([event({ anon: 'c' })])),
        { 'content-type': 'text/plain' },
      ),
    ];
    expect(answers.map((answer) => answer.statusCode)).toEqual([202, 202, 202, 202, 202]);
    expect(await storedIds()).toEqual(ids.sort());
  });

  it('answers 413 for a body that inflates past 1 MiB, a zip bomb included', async () => {
    // 64 MiB of spaces inflate from about 64 KiB; the answer must not wait for all of it.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024, ' '));
    expect(bomb.length).toBeLessThan(128 * 1024);
    const response = await compressed('/v1/events/batch', 'gzip', bomb, {
      'x-tenant-id': 'acme',
      'x-workspace-id': 'eu',
    });
    expect(response.statusCode).toBe(413);
    expect(response.json().error.code).toBe('payload_too_large');
    // Just past the limit once inflated is refused too; just under it is read.
    const events = Array.from({ length: 900 }, () =>
      envelope({ anon: 'v', properties: { pad: 'x'.repeat(1100) } }),
    );
    const large = batchBody(events);
    expect(large.length).toBeGreaterThan(1024 * 1024);
    expect(
      (
        await compressed('/v1/events/batch', 'gzip', gzipSync(large), {
          'x-tenant-id': 'acme',
          'x-workspace-id': 'eu',
        })
      ).statusCode,
    ).toBe(413);
    expect(await storedIds()).toEqual([]);
  });

  it('answers 400 for a body that is not what its encoding says, and 415 for an encoding it does not know', async () => {
    const headers = { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' };
    const corrupt = await compressed(
      '/v1/events/batch',
      'gzip',
      batchBody([envelope({ anon: 'v' })]),
      headers,
    );
    expect(corrupt.statusCode).toBe(400);
    expect(corrupt.json().error.message).toContain('the body is not valid gzip');
    const brotli = await compressed('/v1/events/batch', 'br', batchBody([]), headers);
    expect(brotli.statusCode).toBe(415);
    expect(brotli.json().error.message).toBe(
      'content-encoding br is not supported: send gzip, deflate or none',
    );
    const identity = await compressed(
      '/v1/events/batch',
      'identity',
      batchBody([envelope({ anon: 'v' })]),
      headers,
    );
    expect(identity.statusCode).toBe(202);
  });
});
