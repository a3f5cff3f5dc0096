import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

/** Keys that a $-path reading would take for path syntax, and that must stay plain data. */
const PATH_LIKE_KEYS = ['$x', 'a.b', '"q"', '[0]'];

describe('identifier keys and types of any spelling', () => {
  let env: TestEnv;
  let tokens: Tokens;
  let globexCollector: string;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    await registerEventTypes(env, tokens.otherTenant, 'globex');
    globexCollector = (
      await call(env.app, tokens.otherTenant, 'POST', '/v1/tenants/globex/tokens', {
        kind: 'collector',
        name: 'globex backend',
      })
    ).json().token;
  });
  afterEach(() => env.close());

  const lookup = async (token: string, tenant: string, query: string) => {
    const response = await call(
      env.app,
      token,
      'GET',
      `/v1/tenants/${tenant}/workspaces/eu/profiles/lookup?${query}`,
    );
    return response.statusCode === 200 ? (response.json().profile_id as string) : null;
  };
  const storedKeys = async (tenant: string) =>
    env.context.store.read((session) =>
      session.allText<{ n: number }>(
        `SELECT len(identifier_keys) AS n FROM events WHERE tenant_id = '${tenant}' ORDER BY event_id`,
      ),
    );
  const send = async (token: string, events: Record<string, unknown>[]) => {
    const response = await sendServer(env, token, events);
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().rejected).toEqual([]);
  };

  it("reads path-like keys as data: one tenant's odd keys cost nothing to another tenant in the same backlog", async () => {
    const odd = Object.fromEntries(PATH_LIKE_KEYS.map((key, index) => [key, `v${index}`]));
    await send(tokens.collector, [
      envelope({ id: 'a1', identifiers: { ...odd, email: 'ann@shop.test' } }),
    ]);
    await send(globexCollector, [
      envelope({ id: 'b1', tenant: 'globex', identifiers: { email: 'bea@globex.test' } }),
      envelope({ id: 'b2', tenant: 'globex', identifiers: { phone: '9876543210' } }),
    ]);
    await env.ingest();

    expect(await lookup(tokens.otherTenant, 'globex', 'email=bea@globex.test')).not.toBeNull();
    expect(await lookup(tokens.otherTenant, 'globex', 'phone=9876543210')).not.toBeNull();
    expect(await lookup(tokens.tenant, 'acme', 'email=ann@shop.test')).not.toBeNull();
    // The undeclared keys are ignored as types; the email is the event's one identifier.
    expect(await storedKeys('acme')).toEqual([{ n: 1 }]);
  });

  it('keys a declared type by the value under its own key, in the order written, whatever the other keys', async () => {
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/identifier-types/member', {
      tier: 'strong',
    });
    const odd = { '': 'e', '~1': 't', 'a/b': 's', '~': 'n', é: 'u', '$.member': 'x' };
    await send(tokens.collector, [
      envelope({ id: 'a1', identifiers: { ...odd, member: 'm-1' } }),
      envelope({ id: 'a2', identifiers: { member: 'm-1', email: 'ann@shop.test' } }),
    ]);
    await env.ingest();
    const profile = await lookup(tokens.tenant, 'acme', 'email=ann@shop.test');
    expect(profile).not.toBeNull();
    const view = (
      await call(
        env.app,
        tokens.tenant,
        'GET',
        `/v1/tenants/acme/workspaces/eu/profiles/${profile}`,
      )
    ).json();
    expect(view.identifiers.map((i: { type: string }) => i.type).sort()).toEqual([
      'email',
      'member',
    ]);
  });

  it('ingests an identifier type named constructor like any other', async () => {
    const put = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/identifier-types/constructor',
      { tier: 'strong' },
    );
    expect(put.statusCode).toBe(201);
    await send(tokens.collector, [envelope({ identifiers: { constructor: 'c-1' } })]);
    await send(globexCollector, [
      envelope({ tenant: 'globex', identifiers: { email: 'bea@globex.test' } }),
    ]);
    await env.ingest();
    expect(await lookup(tokens.otherTenant, 'globex', 'email=bea@globex.test')).not.toBeNull();
    expect(await storedKeys('acme')).toEqual([{ n: 1 }]);
    const placeholders = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/placeholders',
      {
        values: { constructor: ['none-yet'] },
      },
    );
    expect(placeholders.statusCode, placeholders.body).toBe(200);
    expect(placeholders.json().values).toEqual({ constructor: ['none-yet'] });
  });
});
