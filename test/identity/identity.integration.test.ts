import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes, sendBrowser, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';

const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';

describe('events to profiles', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  const lookup = async (query: string, workspace = 'eu') => {
    const response = await call(
      env.app,
      tokens.tenant,
      'GET',
      `/v1/tenants/acme/workspaces/${workspace}/profiles/lookup?${query}`,
    );
    return response.statusCode === 200 ? (response.json().profile_id as string) : null;
  };
  const view = async (profileId: string) =>
    (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${profileId}`)).json();
  const count = async (table: string, where = 'true') =>
    (
      await env.context.store.read((s) =>
        s.allText<{ n: number }>(`SELECT count(*) AS n FROM ${table} WHERE ${where}`),
      )
    )[0]?.n;
  const liveProfiles = () => count('profiles', 'merged_into IS NULL');
  // An event keeps the profile it was stored with; it belongs to that profile's survivor.
  const eventsWithProfiles = `(SELECT e.*, coalesce(p.merged_into, e.profile_id) AS survivor_id FROM events e
    LEFT JOIN profiles p USING (tenant_id, workspace_id, profile_id))`;
  const server = async (...specs: Parameters<typeof envelope>[0][]) => {
    const response = await sendServer(env, tokens.collector, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().rejected).toEqual([]);
  };
  const browser = async (...specs: Parameters<typeof envelope>[0][]) => {
    const response = await sendBrowser(env, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().rejected).toEqual([]);
  };

  it('drops email and phone from browser events', async () => {
    await browser({
      anon: 'v1',
      identifiers: { email: 'ann@shop.test', phone: '9876543210', device_id: 'ios-1' },
    });
    await env.ingest();
    expect(await lookup('email=ann@shop.test')).toBeNull();
    const [row] = (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/summary`)).json()
      .profiles;
    const types = (await view(row.profile_id)).identifiers
      .map((i: { type: string }) => i.type)
      .sort();
    expect(types).toEqual(['cookie', 'device_id']);
  });

  it('never merges two profiles on a browser event', async () => {
    await server(
      { identifiers: { email: 'ann@shop.test', cookie: 'a' } },
      { identifiers: { email: 'bob@shop.test', cookie: 'b' } },
    );
    await env.ingest();
    await browser(
      { anon: 'a', identifiers: { device_id: 'shared-tablet' } },
      { anon: 'b', identifiers: { device_id: 'shared-tablet' } },
    );
    await env.ingest();
    expect(await liveProfiles()).toBe(2);
    const ann = await view((await lookup('email=ann@shop.test')) as string);
    expect(ann.identifiers.map((i: { type: string }) => i.type)).toContain('device_id');
    expect(ann.merged_profile_ids).toEqual([]);
  });

  it('merges two profiles on a server event, into the oldest, keeping a merged_into link', async () => {
    await server({ identifiers: { email: 'ann@shop.test' }, at: '2026-01-01T00:00:00Z' });
    await env.ingest();
    await server({ identifiers: { phone: '+919876543210' }, at: '2026-02-01T00:00:00Z' });
    await env.ingest();
    const older = (await lookup('email=ann@shop.test')) as string;
    const newer = (await lookup('phone=9876543210')) as string;
    expect(older).not.toBe(newer);

    await server({
      name: 'signed_up',
      identifiers: { email: 'ann@shop.test', phone: '98765 43210' },
    });
    await env.ingest();
    expect(await liveProfiles()).toBe(1);
    expect(await lookup('phone=9876543210')).toBe(older);
    const survivor = await view(older);
    expect(survivor.merged_profile_ids).toEqual([newer]);
    expect(survivor.created_at).toBe('2026-01-01T00:00:00.000Z');
    const viaOldId = await view(newer);
    expect(viaOldId).toMatchObject({ profile_id: older, merged_into: older });
    const history = (
      await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${older}/history`)
    ).json();
    expect(history.entries.map((e: { kind: string }) => e.kind).sort()).toEqual([
      'event',
      'event',
      'event',
      'merge',
    ]);
  });

  it("lists each event of a profile's history with its properties, emails masked and identifiers gone (issue 38, item 3)", async () => {
    await server({
      name: 'signed_up',
      identifiers: { email: 'ann@shop.test' },
      properties: { plan: 'gold', referrer: { contact: 'bob@shop.test' }, seats: 3 },
    });
    await env.ingest();
    const profileId = (await lookup('email=ann@shop.test')) as string;
    const history = (
      await call(env.app, tokens.workspace, 'GET', `${PROFILES}/${profileId}/history`)
    ).json();
    expect(history.entries).toEqual([
      {
        at: expect.any(String),
        kind: 'event',
        event_id: expect.any(String),
        event_name: 'signed_up',
        properties: { plan: 'gold', referrer: { contact: 'b***@s***.test' }, seats: 3 },
      },
    ]);
  });

  it('sends a returning visitor’s events to the survivor when a later event of the same batch merges their profile', async () => {
    await server({ identifiers: { email: 'ann@shop.test' }, at: '2026-01-01T00:00:00Z' });
    await browser({ anon: 'visitor-9', at: '2026-02-01T00:00:00Z' });
    await env.ingest();
    const visitorProfile = await env.context.store.read(async (session) =>
      session.allText<{ profile_id: string }>(
        "SELECT profile_id FROM events WHERE event_name = 'page_viewed' AND source = 'browser'",
      ),
    );
    const annProfile = (await lookup('email=ann@shop.test')) as string;
    expect(visitorProfile[0]?.profile_id).not.toBe(annProfile);

    // One batch: a page view of the known cookie alone, then the sign-up that links it to Ann.
    await browser({ anon: 'visitor-9', at: '2026-03-01T00:00:00Z' });
    await server({
      name: 'signed_up',
      identifiers: { cookie: 'visitor-9', email: 'ann@shop.test' },
      at: '2026-03-01T00:01:00Z',
    });
    await env.ingest();
    expect(await liveProfiles()).toBe(1);
    expect(await count(eventsWithProfiles, `survivor_id <> '${annProfile}'`)).toBe(0);
    expect(await count('events')).toBe(4);
  });

  it('normalises phone to E.164 (Indian by default) and email to trimmed lowercase', async () => {
    await server({ identifiers: { email: ' Foo@Bar.COM ', phone: '98765 43210' } });
    await env.ingest();
    const profileId = (await lookup('email=foo@bar.com')) as string;
    expect(await lookup('phone=%2B919876543210')).toBe(profileId);
    const identifiers = (await view(profileId)).identifiers;
    expect(identifiers.find((i: { type: string }) => i.type === 'email')).toMatchObject({
      value: 'foo@bar.com',
      masked_value: 'f***@b***.com',
      tier: 'strong',
      status: 'active',
    });
    expect(identifiers.find((i: { type: string }) => i.type === 'phone')).toMatchObject({
      value: '+919876543210',
      masked_value: '+91******3210',
    });
  });

  it('keys values normalised in SQL and in JS alike, as the lookup computes them', async () => {
    // Printable ASCII is normalised in SQL; tabs, newlines and non-ASCII letters in JS.
    await server(
      { identifiers: { email: ' Back\\Slash@Shop.TEST ' } },
      { identifiers: { email: '\tBob@Shop.Test\n' } },
      { identifiers: { email: ' Zoë@Example.COM ' } },
      { identifiers: { email: 'null' } },
    );
    await env.ingest();
    const profiles = await Promise.all(
      ['back%5Cslash@shop.test', 'bob@shop.test', encodeURIComponent('zoë@example.com')].map(
        (email) => lookup(`email=${email}`),
      ),
    );
    expect(profiles.every((id) => typeof id === 'string')).toBe(true);
    expect(new Set(profiles).size).toBe(3);
    expect(await count('profile_identifiers')).toBe(3);
  });

  it('never links on a placeholder value, built-in or the tenant’s own', async () => {
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/placeholders', {
      values: { email: ['nobody@shop.test'] },
    });
    await server(
      { identifiers: { email: 'test@test.com', cookie: 'a' } },
      { identifiers: { email: 'test@test.com', cookie: 'b' } },
      { identifiers: { email: 'NOBODY@shop.test', cookie: 'c' } },
      { identifiers: { email: 'nobody@shop.test', cookie: 'd' } },
      { identifiers: { phone: '0000000000', cookie: 'e' } },
      { identifiers: { phone: '0000000000', cookie: 'f' } },
    );
    await env.ingest();
    expect(await liveProfiles()).toBe(6);
    expect(await count('profile_identifiers', "identifier_type IN ('email', 'phone')")).toBe(0);
    expect(await lookup('email=test@test.com')).toBeNull();
  });

  it('ignores identifier types the tenant has not declared', async () => {
    await server(
      { identifiers: { email: 'ann@shop.test', loyalty_id: 'L-1' } },
      { identifiers: { loyalty_id: 'L-1', cookie: 'z' } },
    );
    await env.ingest();
    expect(await liveProfiles()).toBe(2);
    expect(await count('profile_identifiers', "identifier_type = 'loyalty_id'")).toBe(0);
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/identifier-types/loyalty_id', {
      tier: 'strong',
    });
    await server({ identifiers: { email: 'ann@shop.test', loyalty_id: 'L-1' } });
    await env.ingest();
    expect(await count('profile_identifiers', "identifier_type = 'loyalty_id'")).toBe(1);
  });

  it('keeps workspaces apart: the same email in two workspaces is two profiles', async () => {
    await server(
      { identifiers: { email: 'ann@shop.test' } },
      { workspace: 'us', identifiers: { email: 'ann@shop.test' } },
    );
    await env.ingest();
    const eu = await lookup('email=ann@shop.test', 'eu');
    const us = await lookup('email=ann@shop.test', 'us');
    expect(eu).not.toBeNull();
    expect(us).not.toBeNull();
    expect(eu).not.toBe(us);
    expect(
      (
        await call(
          env.app,
          tokens.workspace,
          'GET',
          `/v1/tenants/acme/workspaces/us/profiles/${us}`,
        )
      ).statusCode,
    ).toBe(403);
  });

  it('dedups by the event type’s key paths, and by id otherwise; first seen wins', async () => {
    await server(
      {
        name: 'order_completed',
        id: 'e1',
        identifiers: { email: 'ann@shop.test' },
        properties: { order_id: 'o-1', total: 10 },
      },
      {
        name: 'order_completed',
        id: 'e2',
        identifiers: { email: 'ann@shop.test' },
        properties: { order_id: 'o-1', total: 99 },
      },
      { name: 'page_viewed', id: 'p1', identifiers: { email: 'ann@shop.test' } },
      { name: 'page_viewed', id: 'p1', identifiers: { email: 'ann@shop.test' } },
      { name: 'signed_up', id: 'o-1', identifiers: { email: 'ann@shop.test' } },
    );
    await env.ingest();
    await server({
      name: 'order_completed',
      id: 'e3',
      identifiers: { email: 'ann@shop.test' },
      properties: { order_id: 'o-1' },
    });
    await env.ingest();
    const stored = await env.context.store.read((s) =>
      s.allText<{ event_id: string; properties: string }>(
        'SELECT event_id, properties FROM events ORDER BY event_id',
      ),
    );
    expect(stored.map((e) => e.event_id)).toEqual(['e1', 'o-1', 'p1']);
    expect(JSON.parse(stored[0]?.properties ?? '{}')).toEqual({ order_id: 'o-1', total: 10 });
    const stats = (
      await env.app.inject({
        method: 'GET',
        url: '/readyz',
        headers: { authorization: `Bearer ${operatorToken(env.context.dataDir.masterKey)}` },
      })
    ).json().ingest;
    expect(stats).toMatchObject({ events_ingested: 3, duplicates: 3 });
  });

  it('refuses an unknown event name at the collector, and at ingest with the reason kept', async () => {
    const refused = await sendServer(env, tokens.collector, [
      envelope({ name: 'checkout_started', identifiers: { email: 'a@b.test' } }),
    ]);
    expect(refused.json().rejected).toEqual([
      {
        index: 0,
        code: 'unknown_event_type',
        message: 'name: event type checkout_started is not registered',
      },
    ]);
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/event-types/coupon_used', {});
    await server({ name: 'coupon_used', id: 'c1', identifiers: { email: 'a@b.test' } });
    await call(env.app, tokens.tenant, 'DELETE', '/v1/tenants/acme/event-types/coupon_used');
    await env.ingest();
    const rejected = await env.context.store.read((s) =>
      s.allText<{ event_id: string; event_name: string; reason: string; file: string }>(
        'SELECT event_id, event_name, reason, file FROM rejected_events',
      ),
    );
    const files = await env.context.store.read((s) =>
      s.allText<{ path: string }>('SELECT path FROM ingested_files'),
    );
    expect(rejected).toEqual([
      {
        event_id: 'c1',
        event_name: 'coupon_used',
        reason: 'unknown_event_type',
        file: expect.stringMatching(/\.ndjson$/),
      },
    ]);
    // The landing file the line came from, as recorded for the batch.
    expect(files.map((row) => row.path)).toContain(rejected[0]?.file);
    expect(await count('events')).toBe(0);
  });

  it('refuses a merge that would exceed max_per_profile and records the conflict', async () => {
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/identifier-types/email', {
      tier: 'strong',
      max_per_profile: 1,
    });
    await server(
      { identifiers: { email: 'ann@shop.test' } },
      { identifiers: { email: 'ann@work.test' } },
    );
    await env.ingest();
    await server(
      { identifiers: { email: 'ann@shop.test', phone: '9876543210' } },
      { identifiers: { email: 'ann@work.test', phone: '9876543210' } },
    );
    await env.ingest();
    expect(await liveProfiles()).toBe(2);
    expect(await count('identity_conflicts', "reason = 'max_per_profile'")).toBeGreaterThan(0);
  });

  it('gives a new customer the first of more keys of a type than max_per_profile allows, and records the rest', async () => {
    await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/identifier-types/cookie', {
      tier: 'weak',
      max_per_profile: 1,
    });
    // One event names two cookies (anon_id first); another new customer in the same batch names one.
    await server(
      { anon: 'first-cookie', identifiers: { cookie: 'second-cookie', email: 'ann@shop.test' } },
      { anon: 'bob-cookie', identifiers: { email: 'bob@shop.test' } },
    );
    await env.ingest();
    expect(await liveProfiles()).toBe(2);
    expect(await count('profile_identifiers', "identifier_type = 'cookie'")).toBe(2);
    expect(await count('profile_identifiers', "identifier_type = 'email'")).toBe(2);
    expect(
      await count(
        'identity_conflicts',
        "reason = 'max_per_profile' AND identifier_type = 'cookie'",
      ),
    ).toBe(1);
    const holders = await env.context.store.read((s) =>
      s.allText<{ cookies: number; emails: number }>(
        `SELECT count(*) FILTER (WHERE identifier_type = 'cookie') AS cookies,
           count(*) FILTER (WHERE identifier_type = 'email') AS emails
         FROM profile_identifiers GROUP BY profile_id ORDER BY ALL`,
      ),
    );
    expect(holders).toEqual([
      { cookies: 1, emails: 1 },
      { cookies: 1, emails: 1 },
    ]);
  });

  it('seals every new identifier of a batch that holds more of them than cross to JS at once', async () => {
    // 20,000 values cross per chunk (src/ingest/identities.ts): 20,001 emails take two.
    const emails = Array.from({ length: 20_001 }, (_, index) => `shopper-${index}@bulk.test`);
    for (let from = 0; from < emails.length; from += 1000) {
      await server(...emails.slice(from, from + 1000).map((email) => ({ identifiers: { email } })));
    }
    await env.ingest();
    expect(await count('profile_identifiers', "identifier_type = 'email'")).toBe(20_001);
    expect(await count('profile_identifiers', 'octet_length(ciphertext) > 0')).toBe(20_001);
    for (const email of [emails[0], emails[19_999], emails[20_000]] as string[]) {
      const profileId = (await lookup(`email=${email}`)) as string;
      expect((await view(profileId)).identifiers).toMatchObject([{ type: 'email', value: email }]);
    }
  });

  it('answers the customer table with masking per type, paged', async () => {
    await server(
      { identifiers: { email: 'ann@shop.test', phone: '9876543210' } },
      { identifiers: { email: 'bob@shop.test' } },
      { identifiers: { cookie: 'anon-1' } },
    );
    await env.ingest();
    const first = (
      await call(env.app, tokens.workspace, 'GET', `${PROFILES}/summary?limit=2`)
    ).json();
    const second = (
      await call(
        env.app,
        tokens.workspace,
        'GET',
        `${PROFILES}/summary?limit=2&cursor=${first.next_cursor}`,
      )
    ).json();
    const rows = [...first.profiles, ...second.profiles];
    expect(second.next_cursor).toBeNull();
    expect(rows.map((r: { email: string | null }) => r.email).sort()).toEqual([
      'ann@shop.test',
      'bob@shop.test',
      null,
    ]);
  });
});

describe('masking when the environment allows no plain identifiers', () => {
  it('answers masked values only', async () => {
    const env = await openTestEnv({ collector: true, config: { plaintext_identifier_types: '' } });
    try {
      const tokens = await seedTenants(env.context);
      await registerEventTypes(env, tokens.tenant);
      await sendServer(env, tokens.collector, [
        envelope({ identifiers: { email: 'ann@shop.test', phone: '9876543210' } }),
      ]);
      await env.ingest();
      const [row] = (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/summary`)).json()
        .profiles;
      expect(row).toMatchObject({ email: 'a***@s***.test', phone: '+91******3210' });
      const profile = (
        await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${row.profile_id}`)
      ).json();
      expect(profile.identifiers.every((i: { value: string | null }) => i.value === null)).toBe(
        true,
      );
    } finally {
      await env.close();
    }
  });
});
