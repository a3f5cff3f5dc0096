import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

/**
 * Names that are keys of every plain object, or of Object.prototype itself, in the spellings the
 * id rules allow (lowercase) and in those they refuse.
 */
const RESERVED = [
  'constructor',
  '__proto__',
  'toString',
  'hasOwnProperty',
  'valueOf',
  'prototype',
  'tostring',
  'hasownproperty',
  'valueof',
  '__definegetter__',
];

const SHOP = 'https://shop.acme.test';

/** A normal answer: 2xx, or 4xx in the error body of design §6. Never a 5xx. */
function expectNormal(response: LightMyRequestResponse, what: string): void {
  expect(response.statusCode, `${what}: ${response.body}`).toBeLessThan(500);
  if (response.statusCode >= 400) {
    expect(response.json(), what).toMatchObject({
      error: { code: expect.any(String), message: expect.any(String) },
    });
  }
}

describe('reserved names (constructor, __proto__, toString …) as ids, names, headers and keys', () => {
  let env: TestEnv;
  let tokens: Tokens;
  const operator = () => operatorToken(env.context.dataDir.masterKey);

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({
      collector: true,
      config: { cors_origins: JSON.stringify({ acme: [SHOP] }) },
    }));
  });
  afterEach(() => env.close());

  /** Another tenant's control plane and collector still answer as usual. */
  const expectOthersWork = async (what: string) => {
    const workspace = await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/workspaces/w1', {
      display_name: what,
    });
    expect(workspace.statusCode, `${what}: ${workspace.body}`).toBeLessThan(300);
    const browser = await env.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-tenant-id': 'acme', 'x-workspace-id': 'w1', origin: SHOP },
      payload: envelope({ anon: 'other', workspace: 'w1' }),
    });
    expect(browser.statusCode, `${what}: ${browser.body}`).toBe(202);
    const server = await sendServer(env, tokens.collector, [envelope({ anon: 'other' })]);
    expect(server.json(), what).toEqual({ accepted: 1, rejected: [] });
  };

  it('a tenant named constructor with a collector token leaves every tenant working', async () => {
    const created = await call(env.app, operator(), 'POST', '/v1/operator/tenants', {
      tenant_id: 'constructor',
      workspaces: ['constructor'],
    });
    expect(created.statusCode, created.body).toBe(201);
    const tenantToken = created.json().tenant_token.token as string;
    const put = (url: string, body: unknown) =>
      call(env.app, tenantToken, 'PUT', `/v1/tenants/constructor${url}`, body);
    expect((await put('/event-types/constructor', {})).statusCode).toBe(201);
    const issued = await call(env.app, tenantToken, 'POST', '/v1/tenants/constructor/tokens', {
      kind: 'collector',
      name: 'constructor',
    });
    expect(issued.statusCode, issued.body).toBe(201);
    await expectOthersWork('after tenant constructor');

    const event = envelope({
      tenant: 'constructor',
      workspace: 'constructor',
      name: 'constructor',
      anon: 'c1',
    });
    const browser = await env.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-tenant-id': 'constructor', 'x-workspace-id': 'constructor' },
      payload: event,
    });
    expect(browser.statusCode, browser.body).toBe(202);
    const token = issued.json().token as string;
    expect((await sendServer(env, token, [event])).json()).toEqual({ accepted: 1, rejected: [] });

    const revoked = await call(
      env.app,
      tenantToken,
      'DELETE',
      `/v1/tenants/constructor/tokens/${issued.json().token_id}`,
    );
    expect(revoked.statusCode).toBe(204);
    expect((await sendServer(env, token, [event])).statusCode).toBe(401);
    await expectOthersWork('after revoking the token of tenant constructor');
  });

  it('every reserved name through every id answers normally, and other tenants keep working', async () => {
    const acme = (method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, body?: unknown) =>
      call(env.app, tokens.tenant, method, `/v1/tenants/acme${url}`, body);
    for (const name of RESERVED) {
      const path = encodeURIComponent(name);
      const answers: [string, LightMyRequestResponse][] = [];
      const tenant = await call(env.app, operator(), 'POST', '/v1/operator/tenants', {
        tenant_id: name,
        workspaces: [name],
      });
      answers.push(['tenant', tenant]);
      if (tenant.statusCode === 201) {
        const token = tenant.json().tenant_token.token as string;
        answers.push([
          'tenant collector token',
          await call(env.app, token, 'POST', `/v1/tenants/${path}/tokens`, { kind: 'collector' }),
        ]);
      }
      answers.push([
        'tenant token for',
        await call(env.app, operator(), 'POST', `/v1/operator/tenants/${path}/tenant-tokens`, {}),
      ]);
      answers.push(['workspace', await acme('PUT', `/workspaces/${path}`, { display_name: name })]);
      answers.push(['workspace read', await acme('GET', `/workspaces/${path}`)]);
      answers.push(['event type', await acme('PUT', `/event-types/${path}`, {})]);
      answers.push(['event type read', await acme('GET', `/event-types/${path}`)]);
      answers.push([
        'identifier type',
        await acme('PUT', `/identifier-types/${path}`, { tier: 'weak' }),
      ]);
      answers.push([
        'placeholders',
        await acme('PUT', '/placeholders', { values: { [name]: ['x'] } }),
      ]);
      answers.push(['placeholders read', await acme('GET', '/placeholders')]);
      answers.push([
        'metric',
        await acme('PUT', '/metric-definitions', {
          metric_name: name,
          event_name: 'page_viewed',
          value_kind: 'count',
        }),
      ]);
      answers.push([
        'segment',
        await acme('PUT', `/segments/${path}`, {
          workspace_id: 'eu',
          display_name: name,
          predicate: { metric: name, op: 'gte', value: 1 },
        }),
      ]);
      answers.push(['segment read', await acme('GET', `/segments/${path}?workspace_id=eu`)]);
      answers.push([
        'segment members',
        await acme('GET', `/segments/${path}/members?workspace_id=eu`),
      ]);
      answers.push(['segments of workspace', await acme('GET', `/segments?workspace_id=${path}`)]);
      answers.push([
        'segments cursor',
        await acme('GET', `/segments?workspace_id=eu&cursor=${path}`),
      ]);
      for (const cursor of [
        `{"${name}": {"w": "eu", "s": "a"}}`,
        `{"w": "eu", "s": "a", "${name}": 1}`,
        `{"p": "${name}"}`,
      ]) {
        const encoded = Buffer.from(cursor).toString('base64url');
        answers.push([
          `crafted cursor ${cursor}`,
          await acme('GET', `/segments?workspace_id=eu&cursor=${encoded}`),
        ]);
        answers.push([
          `crafted summary cursor ${cursor}`,
          await acme('GET', `/workspaces/eu/profiles/summary?cursor=${encoded}`),
        ]);
      }
      answers.push([
        'token name',
        await acme('POST', '/tokens', { kind: 'collector', name, workspace_id: 'eu' }),
      ]);
      answers.push(['query key', await acme('GET', `/tokens?${path}=1&limit=${path}`)]);
      answers.push(['profile', await acme('GET', `/workspaces/eu/profiles/${path}`)]);
      answers.push([
        'profile summary',
        await acme('GET', `/workspaces/${path}/profiles/summary?segment_id=${path}&cursor=${path}`),
      ]);
      answers.push([
        'webhook retry',
        await call(env.app, operator(), 'POST', '/v1/operator/webhooks/retry', {
          webhook_id: name,
        }),
      ]);
      answers.push([
        'erasures',
        await acme('GET', `/erasures?workspace_id=${path}&cursor=${path}`),
      ]);
      answers.push([
        'erase dry run',
        await acme('DELETE', `/workspaces/eu/profiles/${path}?dry_run=true`),
      ]);
      answers.push([
        'event name',
        await sendServer(env, tokens.collector, [envelope({ anon: 'a', name })]),
      ]);
      for (const origin of [undefined, SHOP, 'https://elsewhere.test']) {
        for (const headers of [
          { 'x-tenant-id': name, 'x-workspace-id': 'eu' },
          { 'x-tenant-id': 'acme', 'x-workspace-id': name },
          { 'x-tenant-id': name, 'x-workspace-id': name },
        ]) {
          const withOrigin = origin ? { ...headers, origin } : headers;
          answers.push([
            `browser ${JSON.stringify(withOrigin)}`,
            await env.app.inject({
              method: 'POST',
              url: '/v1/events/batch',
              headers: withOrigin,
              payload: { events: [envelope({ anon: 'a', tenant: name })] },
            }),
          ]);
          answers.push([
            `preflight ${JSON.stringify(withOrigin)}`,
            await env.app.inject({
              method: 'OPTIONS',
              url: '/v1/events',
              headers: { ...withOrigin, 'access-control-request-method': 'POST' },
            }),
          ]);
        }
      }
      for (const [what, response] of answers) expectNormal(response, `${name}: ${what}`);
      await expectOthersWork(`after ${name}`);
    }
  });

  it('the names the id rules allow are created as ids and read back as data', async () => {
    const acme = (method: 'GET' | 'PUT' | 'POST', url: string, body?: unknown) =>
      call(env.app, tokens.tenant, method, `/v1/tenants/acme${url}`, body);
    for (const name of ['constructor', 'valueof', 'tostring', 'prototype']) {
      expect((await acme('PUT', `/workspaces/${name}`, {})).statusCode).toBe(201);
      expect((await acme('PUT', `/identifier-types/${name}`, { tier: 'weak' })).statusCode).toBe(
        201,
      );
      const metric = await acme('PUT', '/metric-definitions', {
        metric_name: name,
        event_name: 'page_viewed',
        value_kind: 'count',
      });
      expect(metric.statusCode, metric.body).toBe(201);
    }
    const placeholders = await acme('PUT', '/placeholders', {
      values: { constructor: ['nobody'], tostring: ['nothing'] },
    });
    expect(placeholders.statusCode, placeholders.body).toBe(200);
    expect(JSON.parse((await acme('GET', '/placeholders')).body).values).toEqual({
      constructor: ['nobody'],
      tostring: ['nothing'],
    });

    const sent = await sendServer(env, tokens.collector, [
      envelope({ anon: 'p1', identifiers: { email: 'p1@example.org', constructor: 'c-1' } }),
    ]);
    expect(sent.json()).toEqual({ accepted: 1, rejected: [] });
    await env.ingest();
    const summary = await call(
      env.app,
      tokens.workspace,
      'GET',
      '/v1/tenants/acme/workspaces/eu/profiles/summary',
    );
    expect(summary.statusCode, summary.body).toBe(200);
    const [row] = JSON.parse(summary.body).profiles;
    const view = await call(
      env.app,
      tokens.workspace,
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/${row.profile_id}`,
    );
    expect(view.statusCode, view.body).toBe(200);
    // Read from the raw text: each metric is an own key of the answer, `constructor` included.
    for (const metrics of [row.metrics, JSON.parse(view.body).metrics]) {
      expect(Object.keys(metrics).sort()).toEqual([
        'constructor',
        'prototype',
        'tostring',
        'valueof',
      ]);
      expect(Object.hasOwn(metrics, 'constructor') && metrics.constructor).toBe(1);
    }
  });

  it('prototype keys in bodies are refused with 400, other reserved keys are data', async () => {
    const raw = (url: string, payload: string, headers: Record<string, string> = {}) =>
      env.app.inject({
        method: url.includes('/tenants/') ? 'PUT' : 'POST',
        url,
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${tokens.tenant}`,
          ...headers,
        },
        payload,
      });
    for (const payload of [
      '{"__proto__": {"tier": "weak"}}',
      '{"tier": "weak", "constructor": {"prototype": {"polluted": true}}}',
    ]) {
      const response = await raw('/v1/tenants/acme/identifier-types/loyalty', payload);
      expect(response.statusCode, response.body).toBe(400);
      expect(response.json().error.code).toEqual(expect.any(String));
    }
    const event = JSON.stringify({
      ...envelope({ anon: 'k1' }),
      properties: JSON.parse('{"constructor": 1, "toString": "x", "valueOf": [1]}'),
    });
    const accepted = await raw('/v1/events', event, {
      'x-tenant-id': 'acme',
      'x-workspace-id': 'eu',
    });
    expect(accepted.statusCode, accepted.body).toBe(202);
    const proto = await raw('/v1/events/batch', `{"events": [{"__proto__": {"a": 1}}]}`, {
      'x-tenant-id': 'acme',
      'x-workspace-id': 'eu',
    });
    expect(proto.statusCode, proto.body).toBe(400);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await expectOthersWork('after prototype keys');
  });
});
