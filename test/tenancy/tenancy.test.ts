import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import type { TestEnv } from '../helpers/context.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const TOKEN_FORMAT = /^cp[twc]_[0-9A-Za-z]{49}$/;

describe('tenants, workspaces and tokens', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ eventTypes: false }));
  });
  afterEach(() => env.close());

  describe('operator routes', () => {
    const operator = () => operatorToken(env.context.dataDir.masterKey);

    it('creates a tenant with workspaces and answers its first tenant token', async () => {
      const response = await call(env.app, operator(), 'POST', '/v1/operator/tenants', {
        tenant_id: 'initech',
        workspaces: ['main', 'main', 'outlet'],
      });
      expect(response.statusCode).toBe(201);
      const body = response.json();
      expect(body).toMatchObject({ tenant_id: 'initech', workspaces: ['main', 'outlet'] });
      expect(body.tenant_token.token).toMatch(/^cpt_/);
      const workspaces = await call(
        env.app,
        body.tenant_token.token,
        'GET',
        '/v1/tenants/initech/workspaces',
      );
      expect(
        workspaces.json().workspaces.map((w: { workspace_id: string }) => w.workspace_id),
      ).toEqual(['main', 'outlet']);
    });

    it('answers 409 for an existing tenant and 404 when issuing for an unknown one', async () => {
      expect(
        (await call(env.app, operator(), 'POST', '/v1/operator/tenants', { tenant_id: 'acme' }))
          .statusCode,
      ).toBe(409);
      expect(
        (await call(env.app, operator(), 'POST', '/v1/operator/tenants/nobody/tenant-tokens', {}))
          .statusCode,
      ).toBe(404);
    });

    it('refuses a bad tenant id with 422', async () => {
      const response = await call(env.app, operator(), 'POST', '/v1/operator/tenants', {
        tenant_id: 'Acme Inc',
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toMatch(/^tenant_id:/);
    });

    it('does not take an operator credential made from another key', async () => {
      const forged = operatorToken(Buffer.alloc(32, 7));
      expect((await call(env.app, forged, 'GET', '/v1/operator/tenants')).statusCode).toBe(401);
    });
  });

  describe('workspaces', () => {
    it('creates (201) and renames (200) a workspace', async () => {
      const created = await call(
        env.app,
        tokens.tenant,
        'PUT',
        '/v1/tenants/acme/workspaces/apac',
        { display_name: 'APAC' },
      );
      expect(created.statusCode).toBe(201);
      expect(created.json()).toMatchObject({ workspace_id: 'apac', display_name: 'APAC' });
      const renamed = await call(
        env.app,
        tokens.tenant,
        'PUT',
        '/v1/tenants/acme/workspaces/apac',
        { display_name: 'Asia' },
      );
      expect(renamed.statusCode).toBe(200);
      expect(renamed.json().display_name).toBe('Asia');
    });

    it('refuses a bad workspace id with 422 and answers 404 for an unknown one', async () => {
      const bad = await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/workspaces/-eu', {});
      expect(bad.statusCode).toBe(422);
      expect(bad.json().error.message).toMatch(/^workspace:/);
      expect(
        (await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/workspaces/apac')).statusCode,
      ).toBe(404);
    });
  });

  describe('tokens', () => {
    it('mints a workspace token once; the listing never shows a secret', async () => {
      const minted = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
        kind: 'workspace',
        workspace_id: 'us',
        name: 'bi',
      });
      expect(minted.statusCode).toBe(201);
      const issued = minted.json();
      expect(issued).toMatchObject({
        kind: 'workspace',
        workspace_id: 'us',
        name: 'bi',
        tenant_id: 'acme',
      });
      expect(issued.token).toMatch(TOKEN_FORMAT);
      const listing = await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/tokens');
      expect(listing.body).not.toContain(issued.token);
      expect(listing.body).not.toContain(issued.token.slice(4, 20));
      const row = listing
        .json()
        .tokens.find((t: { token_id: string }) => t.token_id === issued.token_id);
      expect(Object.keys(row).sort()).toEqual([
        'created_at',
        'kind',
        'name',
        'revoked_at',
        'token_id',
        'workspace_id',
      ]);
    });

    it('stores only a hash of each secret', async () => {
      const stored = await env.context.store.read((session) =>
        session.allText<{ text: string }>(
          "SELECT string_agg(columns(*)::VARCHAR, ' ') AS text FROM tokens",
        ),
      );
      const everything = JSON.stringify(stored);
      for (const token of [tokens.tenant, tokens.workspace, tokens.collector]) {
        expect(everything).not.toContain(token.slice(4, 24));
      }
    });

    it('mints a collector token with or without a workspace', async () => {
      const response = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
        kind: 'collector',
        name: 'web',
      });
      expect(response.statusCode).toBe(201);
      expect(response.json()).toMatchObject({ kind: 'collector', workspace_id: null });
      expect(response.json().token).toMatch(/^cpc_/);
    });

    it.each([
      ['a workspace token without workspace_id', { kind: 'workspace', name: 'x' }, 'workspace_id'],
      ['an unknown kind', { kind: 'tenant', name: 'x' }, 'kind'],
      ['no name', { kind: 'collector' }, 'name'],
      [
        'an unknown workspace',
        { kind: 'workspace', workspace_id: 'apac', name: 'x' },
        'workspace_id',
      ],
    ])('refuses %s with 422 naming %s', async (_case, body, field) => {
      const response = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', body);
      expect(response.statusCode).toBe(422);
      expect(
        response.json().error.message.startsWith(`${field}:`),
        response.json().error.message,
      ).toBe(true);
    });

    it('revokes at once: the next request with the token answers 401', async () => {
      expect((await call(env.app, tokens.workspace, 'GET', '/v1/whoami')).statusCode).toBe(200);
      const whoami = (await call(env.app, tokens.workspace, 'GET', '/v1/whoami')).json();
      const revoked = await call(
        env.app,
        tokens.tenant,
        'DELETE',
        `/v1/tenants/acme/tokens/${whoami.token_id}`,
      );
      expect(revoked.statusCode).toBe(204);
      expect((await call(env.app, tokens.workspace, 'GET', '/v1/whoami')).statusCode).toBe(401);
      expect(
        (await call(env.app, tokens.tenant, 'DELETE', `/v1/tenants/acme/tokens/${whoami.token_id}`))
          .statusCode,
      ).toBe(404);
    });

    it('does not let a tenant revoke another tenant’s token', async () => {
      const other = (await call(env.app, tokens.otherTenant, 'GET', '/v1/whoami')).json();
      expect(
        (await call(env.app, tokens.tenant, 'DELETE', `/v1/tenants/acme/tokens/${other.token_id}`))
          .statusCode,
      ).toBe(404);
      expect((await call(env.app, tokens.otherTenant, 'GET', '/v1/whoami')).statusCode).toBe(200);
    });

    it.each([
      ['a malformed token', 'hello'],
      ['a token with a wrong checksum', `${'cpt_'}${'A'.repeat(49)}`],
      ['a basic auth header', null],
    ])('answers 401 to %s', async (_case, token) => {
      const response = await env.app.inject({
        method: 'GET',
        url: '/v1/whoami',
        headers: { authorization: token ? `Bearer ${token}` : 'Basic dXNlcjpwYXNz' },
      });
      expect(response.statusCode).toBe(401);
    });
  });

  describe('GET /v1/whoami', () => {
    it.each([
      [
        'tenant',
        {
          kind: 'tenant',
          tenant_id: 'acme',
          workspace_id: null,
          can_write: true,
          can_read: expect.arrayContaining(['profiles', 'erasures']),
        },
      ],
      ['workspace', { kind: 'workspace', tenant_id: 'acme', workspace_id: 'eu', can_write: false }],
      [
        'collector',
        {
          kind: 'collector',
          tenant_id: 'acme',
          workspace_id: null,
          can_write: false,
          can_read: [],
        },
      ],
    ] as const)('reports what a %s token can do', async (name, expected) => {
      const response = await call(env.app, tokens[name], 'GET', '/v1/whoami');
      expect(response.json()).toMatchObject({
        ...expected,
        token_id: expect.stringMatching(/^tok_/),
      });
    });

    it('lets a workspace token read profiles and segments but not tokens', async () => {
      const { can_read } = (await call(env.app, tokens.workspace, 'GET', '/v1/whoami')).json();
      expect(can_read).toEqual(['event_types', 'metric_definitions', 'segments', 'profiles']);
    });
  });

  describe('identifier types and placeholders', () => {
    it('starts a tenant with cookie, device_id, email and phone', async () => {
      const response = await call(
        env.app,
        tokens.tenant,
        'GET',
        '/v1/tenants/acme/identifier-types',
      );
      expect(
        response
          .json()
          .identifier_types.map(
            (t: { type: string; tier: string; max_per_profile: number | null }) => [
              t.type,
              t.tier,
              t.max_per_profile,
            ],
          ),
      ).toEqual([
        ['cookie', 'weak', null],
        ['device_id', 'weak', null],
        ['email', 'strong', 5],
        ['phone', 'strong', 5],
      ]);
    });

    it('declares a new type (201) and changes it (200)', async () => {
      const url = '/v1/tenants/acme/identifier-types/loyalty_id';
      expect(
        (await call(env.app, tokens.tenant, 'PUT', url, { tier: 'strong', max_per_profile: 1 }))
          .statusCode,
      ).toBe(201);
      const changed = await call(env.app, tokens.tenant, 'PUT', url, { tier: 'weak' });
      expect(changed.statusCode).toBe(200);
      expect(changed.json()).toMatchObject({
        type: 'loyalty_id',
        tier: 'weak',
        max_per_profile: null,
      });
    });

    it.each([
      ['tier', { tier: 'medium' }],
      ['max_per_profile', { tier: 'strong', max_per_profile: 0 }],
    ])('refuses a bad %s with 422', async (field, body) => {
      const response = await call(
        env.app,
        tokens.tenant,
        'PUT',
        '/v1/tenants/acme/identifier-types/loyalty_id',
        body,
      );
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message.startsWith(`${field}:`)).toBe(true);
    });

    it('replaces the tenant placeholder list, normalised, next to the built-in one', async () => {
      const url = '/v1/tenants/acme/placeholders';
      const put = await call(env.app, tokens.tenant, 'PUT', url, {
        values: { email: [' Nobody@Shop.test ', 'nobody@shop.test'], '*': ['TBD'] },
      });
      expect(put.statusCode).toBe(200);
      expect(put.json().values).toEqual({ '*': ['tbd'], email: ['nobody@shop.test'] });
      expect(put.json().built_in.email).toContain('test@test.com');
      expect(put.json().built_in.phone).toContain('0000000000');
      await call(env.app, tokens.tenant, 'PUT', url, { values: { phone: ['1111111111'] } });
      expect((await call(env.app, tokens.tenant, 'GET', url)).json().values).toEqual({
        phone: ['1111111111'],
      });
    });

    it('refuses placeholders that are not lists of strings', async () => {
      const response = await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/placeholders', {
        values: { email: 'x' },
      });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toMatch(/^values\.email:/);
    });
  });
});
