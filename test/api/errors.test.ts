import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeLines } from '../../src/collector/landing-writer.js';
import { landingWriter } from '../../src/collector/runtime.js';
import { ShuttingDownError } from '../../src/errors.js';
import { openTestEnv, type TestEnv, tempDir } from '../helpers/context.js';
import { envelope, registerEventTypes } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { seedTenants, type Tokens } from '../helpers/tenant.js';

describe('error answers', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeAll(async () => {
    ({ env, tokens } = await openSeededEnv({ eventTypes: false }));
  });
  afterAll(() => env.close());

  const send = (payload: string, contentType: string) =>
    env.app.inject({
      method: 'PUT',
      url: '/v1/tenants/acme/event-types/page_viewed',
      headers: { authorization: `Bearer ${tokens.tenant}`, 'content-type': contentType },
      payload,
    });

  it('answers 400 to unparsable JSON', async () => {
    const response = await send('{"dedup_entity": ', 'application/json');
    expect(response.statusCode).toBe(400);
    expect(response.json().error.code).toBe('bad_request');
  });

  it('answers 422 naming the field to a control-plane body holding a lone surrogate', async () => {
    const cases: [string, string, string][] = [
      ['/v1/tenants/acme/placeholders', '{"values":{"email":["\\ud800"]}}', 'values.email.0'],
      [
        '/v1/tenants/acme/segments/lone',
        '{"workspace_id":"eu","display_name":"x","predicate":{"metric":"m","op":"in","value":["a\\udc00"]}}',
        'predicate.value.0',
      ],
    ];
    for (const [url, payload, path] of cases) {
      const response = await env.app.inject({
        method: 'PUT',
        url,
        headers: { authorization: `Bearer ${tokens.tenant}`, 'content-type': 'application/json' },
        payload,
      });
      expect(response.statusCode, response.body).toBe(422);
      expect(response.json().error).toMatchObject({
        code: 'validation_failed',
        message: `${path}: holds a lone UTF-16 surrogate, which is not text`,
      });
    }
  });

  it('answers 415 to a body that is not JSON', async () => {
    const response = await send('dedup_entity=order', 'text/plain');
    expect(response.statusCode).toBe(415);
    expect(response.json()).toEqual({
      error: {
        code: 'unsupported_media_type',
        message: 'the body must be JSON (content-type: application/json)',
      },
    });
  });

  it('answers 413 to a body over 1 MiB', async () => {
    const response = await send(
      JSON.stringify({ dedup_entity: 'x'.repeat(1024 * 1024) }),
      'application/json',
    );
    expect(response.statusCode).toBe(413);
    expect(response.json().error.code).toBe('payload_too_large');
  });

  it('answers 404 with the error body to an unknown route', async () => {
    const response = await env.app.inject({ method: 'GET', url: '/v1/nothing-here' });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toEqual({
      error: { code: 'not_found', message: 'no route GET /v1/nothing-here' },
    });
  });

  it('answers 401 before looking at the body', async () => {
    const response = await env.app.inject({
      method: 'PUT',
      url: '/v1/tenants/acme/event-types/page_viewed',
      headers: { 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(response.statusCode).toBe(401);
    expect(response.json().error.code).toBe('unauthorized');
  });

  it('answers 403 to a workspace token before validating its write', async () => {
    const response = await env.app.inject({
      method: 'PUT',
      url: '/v1/tenants/acme/event-types/BAD NAME',
      headers: { authorization: `Bearer ${tokens.workspace}` },
      payload: {},
    });
    expect(response.statusCode).toBe(403);
  });

  it('lists every validation issue in details', async () => {
    const response = await env.app.inject({
      method: 'PUT',
      url: '/v1/tenants/acme/metric-definitions',
      headers: { authorization: `Bearer ${tokens.tenant}` },
      payload: { metric_name: 'Bad', value_kind: 'nope' },
    });
    expect(response.statusCode).toBe(422);
    const paths = response.json().error.details.map((issue: { path: string }) => issue.path);
    expect(paths).toEqual(expect.arrayContaining(['metric_name', 'event_name', 'value_kind']));
  });

  it('answers GET /healthz and /readyz without a token', async () => {
    expect((await env.app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({
      status: 'ok',
    });
    expect((await env.app.inject({ method: 'GET', url: '/readyz' })).json()).toEqual({
      status: 'ready',
      ingest: { backlog_files: 0, lag_seconds: 0, failing: false },
    });
  });
});

describe('while the server shuts down', () => {
  it('answers 503 in the error body and takes none of the events of a request that arrives then', async () => {
    const env = await openTestEnv({ collector: true });
    let url = '';
    const sendEvent = (id: string) =>
      fetch(`${url}/v1/events`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-tenant-id': 'acme',
          'x-workspace-id': 'eu',
        },
        body: JSON.stringify(envelope({ id, anon: 'v1' })),
      });
    const landed = () =>
      readdirSync(join(env.dir, 'landing'), { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile())
        .map((entry) => readFileSync(join(entry.parentPath, entry.name), 'utf8'))
        .join('');
    const during: Response[] = [];
    // Runs after the server has begun to close and before it stops listening: what a client
    // that sends a request in that moment gets.
    env.app.addHook('preClose', async () => {
      during.push(await sendEvent('sent-while-closing'));
      during.push(await fetch(`${url}/readyz`));
      during.push(await fetch(`${url}/healthz`));
    });
    try {
      const tokens = await seedTenants(env.context);
      await registerEventTypes(env, tokens.tenant);
      await env.app.listen({ port: 0, host: '127.0.0.1' });
      url = `http://127.0.0.1:${(env.app.server.address() as AddressInfo).port}`;
      expect((await sendEvent('sent-before')).status).toBe(202);

      await env.app.close();
      expect(during.map((response) => response.status)).toEqual([503, 503, 503]);
      for (const response of during) {
        expect(response.headers.get('connection')).toBe('close');
        expect(await response.json()).toEqual({
          error: {
            code: 'shutting_down',
            message:
              'the server is shutting down and took nothing of this request; send it again once it is back',
          },
        });
      }
      expect(landed()).toContain('sent-before');
      expect(landed()).not.toContain('sent-while-closing');
    } finally {
      await env.close();
    }
  });

  it('answers a request whose checking outlived the collector 503 shutting_down, and writes none of it', async () => {
    const dir = tempDir();
    const writer = landingWriter(join(dir, 'landing'), { landing_max_age_ms: 1000 });
    await writer.close();
    const append = writer.append(
      encodeLines([
        {
          tenantId: 'acme',
          workspaceId: 'eu',
          receivedAt: '2026-03-01T10:00:00.000Z',
          text: '{"late":true}',
        },
      ]),
    );
    await expect(append).rejects.toBeInstanceOf(ShuttingDownError);
    await expect(append).rejects.toMatchObject({ status: 503, code: 'shutting_down' });
    expect(existsSync(join(dir, 'landing'))).toBe(false);
  });
});
