import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const PLACEHOLDERS = '/v1/tenants/acme/placeholders';

describe('placeholders, normalised like the values they match', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  const lookup = async (query: string) => {
    const response = await call(
      env.app,
      tokens.tenant,
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/lookup?${query}`,
    );
    return response.statusCode === 200 ? (response.json().profile_id as string) : null;
  };
  const typesOf = async (query: string) => {
    const profile = await lookup(query);
    const view = await call(
      env.app,
      tokens.tenant,
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/${profile}`,
    );
    return view.json().identifiers.map((i: { type: string }) => i.type);
  };

  const identifierTypes = () =>
    env.context.store.read((session) =>
      session.allText<{ identifier_type: string; n: number }>(
        'SELECT identifier_type, count(*)::INTEGER AS n FROM profile_identifiers GROUP BY ALL ORDER BY ALL',
      ),
    );

  it('stores a placeholder phone as E.164, and one that does not parse as typed', async () => {
    const put = await call(env.app, tokens.tenant, 'PUT', PLACEHOLDERS, {
      values: { phone: ['9999999999', ' 12-AB '], email: [' Nobody@Shop.TEST '] },
    });
    expect(put.statusCode, put.body).toBe(200);
    expect(put.json().values).toEqual({
      email: ['nobody@shop.test'],
      phone: ['+919999999999', '12-ab'],
    });
  });

  it('drops every spelling of a placeholder phone, so it merges no one', async () => {
    await call(env.app, tokens.tenant, 'PUT', PLACEHOLDERS, {
      values: { phone: ['9999999999'], email: [' Nobody@Shop.TEST '] },
    });
    const spellings = ['+91 99999 99999', '+919999999999', '099999 99999', '9999999999'];
    const response = await sendServer(env, tokens.collector, [
      ...spellings.map((phone, index) =>
        envelope({ identifiers: { email: `c${index}@shop.test`, phone } }),
      ),
      envelope({ identifiers: { email: '  NOBODY@shop.test', cookie: 'k1' } }),
    ]);
    expect(response.json().accepted).toBe(5);
    await env.ingest();

    for (const [index] of spellings.entries()) {
      expect(await typesOf(`email=c${index}@shop.test`)).toEqual(['email']);
    }
    expect(await lookup('phone=9999999999')).toBeNull();
    expect(await lookup('email=nobody@shop.test')).toBeNull();
    expect(await identifierTypes()).toEqual([
      { identifier_type: 'cookie', n: 1 },
      { identifier_type: 'email', n: 4 },
    ]);
  });
});
