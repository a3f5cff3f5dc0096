import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes, sendBrowser, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';
import {
  basicAuth,
  declareUserId,
  type LandedEvent,
  type LandedLine,
  landedEvents,
  landedLines,
  mintWriteKey,
  postTrackingApi,
  registerTrackingCallTypes,
} from '../helpers/tracking-api.js';

const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';
/** The test clock's time: the collector's `receivedAt`. */
const NOW = '2026-03-01T12:00:00.000Z';
const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('Segment-spec tracking API', () => {
  let env: TestEnv;
  let tokens: Tokens;
  let writeKey: string;

  // One store for all: each test looks at the lines it landed, and at profiles by its own ids.
  beforeAll(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    await registerTrackingCallTypes(env, tokens.tenant);
    await declareUserId(env, tokens.tenant);
    writeKey = await mintWriteKey(env, tokens.tenant);
  });
  afterAll(() => env.close());

  /** What landed while `action` ran. */
  const landedBy = async (action: () => Promise<unknown>) => {
    const before = (await landedEvents(env)).length;
    await action();
    return (await landedEvents(env)).slice(before);
  };

  const batch = (messages: unknown[], extra: Record<string, unknown> = {}) =>
    postTrackingApi(env, '/v1/batch', { batch: messages, ...extra }, writeKey);

  /** Sends messages in one batch, expects every one accepted, and answers what landed of them. */
  const land = (messages: unknown[], extra: Record<string, unknown> = {}) =>
    landedBy(async () => {
      const response = await batch(messages, extra);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({ success: true, accepted: messages.length, rejected: [] });
    });
  const landOne = async (message: unknown, extra: Record<string, unknown> = {}) =>
    (await land([message], extra))[0] as LandedEvent;

  const track = (fields: Record<string, unknown> = {}) => ({
    type: 'track',
    event: 'Order Completed',
    anonymousId: 'visitor-1',
    timestamp: '2026-03-01T10:00:00.000Z',
    ...fields,
  });

  describe('mapping a message to an envelope', () => {
    it('makes a track message an event of the write key’s workspace, its ids identifiers', async () => {
      const event = await landOne(
        track({
          messageId: 'node-next-1668208232027-743be593-7789-4b74-8078-cbcc8894c586',
          userId: 'user-42',
          properties: { order_id: 'o1', revenue: 30, identifiers: { email: 'forged@evil.test' } },
          context: {
            traits: { email: 'Ann@Shop.test', phone: '9876543210', plan: 'gold' },
            library: { name: 'analytics-node-next', version: '3.1.0' },
            ip: '203.0.113.9',
          },
          integrations: { All: true },
        }),
      );
      expect(event).toEqual({
        envelop_version: '1.0',
        id: expect.stringMatching(UUID_V8),
        name: 'order_completed',
        tenant_id: 'acme',
        workspace_id: 'eu',
        anon_id: 'cookie:visitor-1',
        occured_at: '2026-03-01T10:00:00.000Z',
        properties: {
          order_id: 'o1',
          revenue: 30,
          identifiers: { user_id: 'user-42', email: 'Ann@Shop.test', phone: '9876543210' },
        },
      });
    });

    it('names the Segment tracking API as each line’s intake, its source server; cds’s own routes name none', async () => {
      const linesBy = async (action: () => Promise<{ statusCode: number; body: string }>) => {
        const before = (await landedLines(env)).length;
        const response = await action();
        expect(response.statusCode, response.body).toBeLessThan(300);
        return (await landedLines(env)).slice(before);
      };
      const origins = (lines: LandedLine[]) => [
        ...new Set(lines.map((line) => `${line.source}/${line.intake ?? '-'}`)),
      ];
      // A batch this large is checked on worker threads: the intake goes there with the request.
      const large = Array.from({ length: 200 }, (_, i) =>
        track({ messageId: `intake-${i}`, properties: { pad: 'p'.repeat(400) } }),
      );
      expect(JSON.stringify({ batch: large }).length).toBeGreaterThan(64 * 1024);
      for (const lines of [
        await linesBy(() => postTrackingApi(env, '/v1/track', track(), writeKey)),
        await linesBy(() => batch([track(), track({ type: 'page', name: 'Home' })])),
        await linesBy(() => batch(large)),
      ]) {
        expect(lines.length).toBeGreaterThan(0);
        expect(origins(lines)).toEqual(['server/segment_api']);
      }
      const own = await linesBy(() =>
        sendServer(env, tokens.collector, [envelope({ identifiers: { email: 'own@shop.test' } })]),
      );
      expect(origins(own)).toEqual(['server/-']);
      expect(Object.keys(own[0] ?? {})).toEqual(['received_at', 'source', 'collector_id', 'event']);
      const browser = await linesBy(() => sendBrowser(env, [envelope({ anon: 'own-visitor' })]));
      expect(origins(browser)).toEqual(['browser/-']);
    });

    it.each([
      ['Order Completed', 'order_completed'],
      ['  order--completed!! ', 'order_completed'],
      ['ORDER_COMPLETED', 'order_completed'],
      ['order.completed', 'order_completed'],
      ['Ordér Completed', 'ord_r_completed'],
      ['signed up', 'signed_up'],
    ])('names a track event %j as %j', async (sent, name) => {
      if (name === 'ord_r_completed') {
        await call(env.app, tokens.tenant, 'PUT', `/v1/tenants/acme/event-types/${name}`, {});
      }
      expect((await landOne(track({ event: sent }))).name).toBe(name);
    });

    it('refuses a track event whose name maps to no event type name, per message', async () => {
      const response = await batch([
        track({ event: '!!!' }),
        track({ event: '1st Order' }),
        track({ event: 'x'.repeat(129) }),
        track({ event: 'Checkout Started' }),
        track({ event: undefined }),
        track(),
      ]);
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({
        success: true,
        accepted: 1,
        rejected: [
          {
            index: 0,
            code: 'invalid_event',
            message:
              'event: "!!!" becomes "", which is no event type name (a letter, then letters, digits and _, at most 128)',
          },
          {
            index: 1,
            code: 'invalid_event',
            message:
              'event: "1st Order" becomes "1st_order", which is no event type name (a letter, then letters, digits and _, at most 128)',
          },
          { index: 2, code: 'invalid_event', message: expect.stringMatching(/^event: "x{129}"/) },
          {
            index: 3,
            code: 'unknown_event_type',
            message: 'name: event type checkout_started is not registered',
          },
          { index: 4, code: 'invalid_event', message: 'event: is required on a track message' },
        ],
      });
    });

    it('keeps a UUID messageId and maps any other one to the same UUID every time', async () => {
      const uuid = '0b9c8d27-5a1e-4c3f-9a7d-2f4e6b8c1d3e';
      const [kept, mapped, again, other, generated, generatedToo] = await land([
        track({ messageId: uuid }),
        track({ messageId: 'msg-1' }),
        track({ messageId: 'msg-1' }),
        track({ messageId: 'msg-2' }),
        track(),
        track({ messageId: '' }),
      ]);
      expect(kept?.id).toBe(uuid);
      expect(mapped?.id).toMatch(UUID_V8);
      expect(again?.id).toBe(mapped?.id);
      expect(other?.id).not.toBe(mapped?.id);
      expect(generated?.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(generatedToo?.id).not.toBe(generated?.id);

      // Another workspace's write key maps the same messageId to another id.
      const usKey = await mintWriteKey(env, tokens.tenant, 'us');
      const [us] = await landedBy(() =>
        postTrackingApi(env, '/v1/track', track({ messageId: 'msg-1' }), usKey),
      );
      expect(us?.workspace_id).toBe('us');
      expect(us?.id).toMatch(UUID_V8);
      expect(us?.id).not.toBe(mapped?.id);
    });

    it('stores a message sent twice (a retry) once', async () => {
      const message = track({ event: 'Signed Up', messageId: 'node-next-1-retried' });
      const [first] = await land([message]);
      const [second] = await land([message]);
      expect(second?.id).toBe(first?.id);
      await env.ingest();
      const stored = await env.context.store.read((s) =>
        s.allText<{ n: number }>('SELECT count(*) AS n FROM events WHERE event_id = $id', {
          id: first?.id ?? '',
        }),
      );
      expect(stored[0]?.n).toBe(1);
    });

    it.each([
      [
        'timestamp moved by the skew of the message’s sentAt',
        { timestamp: '2026-03-01T10:00:00.000Z', sentAt: '2026-03-01T10:05:00.000Z' },
        {},
        '2026-03-01T11:55:00.000Z',
      ],
      [
        'timestamp moved by the skew of the batch’s sentAt',
        { timestamp: '2026-03-01T10:00:00.000Z' },
        { sentAt: '2026-03-01T10:00:30.000Z' },
        '2026-03-01T11:59:30.000Z',
      ],
      [
        'the message’s sentAt before the batch’s',
        { timestamp: '2026-03-01T10:00:00.000Z', sentAt: '2026-03-01T10:00:10.000Z' },
        { sentAt: '2026-03-01T09:00:00.000Z' },
        '2026-03-01T11:59:50.000Z',
      ],
      [
        'a device clock ahead of the collector’s',
        { timestamp: '2026-03-01T12:30:00.000Z', sentAt: '2026-03-01T12:30:05.000Z' },
        {},
        '2026-03-01T11:59:55.000Z',
      ],
      [
        'timestamp as sent without a sentAt',
        { timestamp: '2026-02-01T08:00:00+05:30' },
        {},
        '2026-02-01T02:30:00.000Z',
      ],
      [
        'RudderStack’s originalTimestamp where there is no timestamp',
        { timestamp: undefined, originalTimestamp: '2026-03-01T10:00:00.000Z' },
        { sentAt: '2026-03-01T10:00:01.000Z' },
        '2026-03-01T11:59:59.000Z',
      ],
      ['the time it arrived without a timestamp', { timestamp: undefined }, {}, NOW],
    ])('sets occured_at to the %s', async (_case, fields, extra, occuredAt) => {
      expect((await landOne(track(fields), extra)).occured_at).toBe(occuredAt);
    });

    it('makes identify traits properties, except the email and phone, which are identifiers', async () => {
      const event = await landOne({
        type: 'identify',
        userId: 'user-42',
        anonymousId: 'visitor-1',
        traits: { email: 'ann@shop.test', phone: '+919876543210', plan: 'gold', age: 41 },
        context: { traits: { email: 'other@shop.test' } },
        timestamp: '2026-03-01T10:00:00.000Z',
      });
      expect(event.name).toBe('identify');
      expect(event.anon_id).toBe('cookie:visitor-1');
      expect(event.properties).toEqual({
        plan: 'gold',
        age: 41,
        identifiers: { user_id: 'user-42', email: 'ann@shop.test', phone: '+919876543210' },
      });
      // Without an email in its own traits, identify takes the context's.
      const fromContext = await landOne({
        type: 'identify',
        userId: 7,
        context: { traits: { email: 'ctx@shop.test' } },
      });
      expect(fromContext.properties).toEqual({
        identifiers: { user_id: 7, email: 'ctx@shop.test' },
      });
    });

    it('maps page, screen, group and alias to events of those names', async () => {
      const [page, screen, group, alias] = await land([
        {
          type: 'page',
          anonymousId: 'visitor-1',
          name: 'Pricing',
          category: 'Docs',
          properties: { path: '/pricing', name: 'overridden' },
        },
        { type: 'screen', userId: 'user-42', name: 'Home', properties: { variant: 'b' } },
        {
          type: 'group',
          userId: 'user-42',
          groupId: 'acme-corp',
          traits: { name: 'Acme Corp', email: 'billing@acme-corp.test', employees: 120 },
        },
        { type: 'alias', userId: 'user-42', previousId: 'visitor-1' },
      ]);
      expect(page?.name).toBe('page');
      expect(page?.properties).toEqual({
        path: '/pricing',
        name: 'Pricing',
        category: 'Docs',
        identifiers: {},
      });
      expect(screen?.name).toBe('screen');
      expect(screen?.properties).toEqual({
        variant: 'b',
        name: 'Home',
        identifiers: { user_id: 'user-42' },
      });
      // A group's email is the company's: neither the person's identifier nor a plain property.
      expect(group?.name).toBe('group');
      expect(group?.properties).toEqual({
        name: 'Acme Corp',
        employees: 120,
        group_id: 'acme-corp',
        identifiers: { user_id: 'user-42' },
      });
      expect(alias?.name).toBe('alias');
      expect(alias?.anon_id).toBeUndefined();
      expect(alias?.properties).toEqual({
        identifiers: { user_id: 'user-42', cookie: 'visitor-1' },
      });
    });

    it('accepts identify and the others only once the tenant registers them', async () => {
      await call(env.app, tokens.tenant, 'DELETE', '/v1/tenants/acme/event-types/identify');
      const identify = { type: 'identify', userId: 'u1' };
      expect((await batch([identify])).json().rejected).toEqual([
        {
          index: 0,
          code: 'unknown_event_type',
          message: 'name: event type identify is not registered',
        },
      ]);
      await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/event-types/identify', {});
      expect((await batch([identify])).json().accepted).toBe(1);
    });

    /** The profile an email names, as the profile API shows it. */
    const profileOf = async (email: string) => {
      const lookup = await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?email=${email}`);
      expect(lookup.statusCode, lookup.body).toBe(200);
      const view = await call(
        env.app,
        tokens.tenant,
        'GET',
        `${PROFILES}/${lookup.json().profile_id}`,
      );
      return view.json() as {
        profile_id: string;
        identifiers: { type: string }[];
        merged_profile_ids: string[];
      };
    };
    const typesOf = (profile: { identifiers: { type: string }[] }) =>
      profile.identifiers.map((identifier) => identifier.type).sort();

    it('links a visitor’s cookie, userId, email and phone into one profile (user_id declared)', async () => {
      const landed = await land([
        track({ event: 'Signed Up', anonymousId: 'visitor-cara' }),
        {
          type: 'identify',
          userId: 'user-cara',
          anonymousId: 'visitor-cara',
          traits: { email: 'Cara@Shop.test', phone: '9876500001', plan: 'gold' },
        },
        track({ anonymousId: undefined, userId: 'user-cara', properties: { order_id: 'o-cara' } }),
      ]);
      await env.ingest();
      const profile = await profileOf('cara@shop.test');
      expect(typesOf(profile)).toEqual(['cookie', 'email', 'phone', 'user_id']);
      const stored = await env.context.store.read((s) =>
        s.allText<{ n: number; profiles: number; plain: number }>(
          `SELECT count(*) AS n, count(DISTINCT profile_id) AS profiles,
             count(*) FILTER (WHERE properties::VARCHAR ILIKE '%shop.test%' OR properties::VARCHAR LIKE '%9876500001%') AS plain
           FROM events WHERE list_contains(CAST($ids AS JSON)::VARCHAR[], event_id)`,
          { ids: JSON.stringify(landed.map((event) => event.id)) },
        ),
      );
      expect(stored[0]).toEqual({ n: 3, profiles: 1, plain: 0 });
    });

    it('links an alias’s previousId (a visitor’s anonymous id) to its userId', async () => {
      await land([
        track({ event: 'Signed Up', anonymousId: 'visitor-bo' }),
        track({
          anonymousId: undefined,
          userId: 'user-bo',
          context: { traits: { email: 'bo@shop.test' } },
          properties: { order_id: 'o-bo' },
        }),
      ]);
      await env.ingest();
      expect(typesOf(await profileOf('bo@shop.test'))).toEqual(['email', 'user_id']);
      await land([{ type: 'alias', userId: 'user-bo', previousId: 'visitor-bo' }]);
      await env.ingest();
      const linked = await profileOf('bo@shop.test');
      expect(typesOf(linked)).toEqual(['cookie', 'email', 'user_id']);
      expect(linked.merged_profile_ids).toHaveLength(1);
    });
  });

  describe('faults of one message', () => {
    it('reports each refused message of a batch by its index and keeps the rest', async () => {
      const response = await batch([
        track(),
        { event: 'Order Completed', anonymousId: 'v' },
        track({ timestamp: 'yesterday' }),
        track({ anonymousId: undefined }),
        'not a message',
        track({ properties: ['a'] }),
        track({ anonymousId: 'v'.repeat(250) }),
        track({ properties: { blob: 'x'.repeat(33 * 1024) } }),
        { type: 'identify', userId: 'u1', traits: { bad: '\ud800' } },
        track({ timestamp: '0001-01-01T00:00:00Z', sentAt: '9999-01-01T00:00:00Z' }),
        track({ userId: { id: 1 } }),
      ]);
      expect(response.statusCode).toBe(200);
      const { accepted, rejected } = response.json();
      expect(accepted).toBe(1);
      expect(rejected).toEqual([
        {
          index: 1,
          code: 'invalid_event',
          message: 'type: must be one of track, identify, page, screen, alias, group',
        },
        { index: 2, code: 'invalid_event', message: 'timestamp: must be an ISO 8601 timestamp' },
        {
          index: 3,
          code: 'no_identifiers',
          message: 'userId: the message has no userId or anonymousId (nor an email or phone trait)',
        },
        { index: 4, code: 'invalid_event', message: expect.stringMatching(/^message: /) },
        { index: 5, code: 'invalid_event', message: 'properties: must be an object' },
        {
          index: 6,
          code: 'invalid_event',
          message: 'anonymousId: must be at most 249 characters, on one line',
        },
        { index: 7, code: 'event_too_large', message: 'event: is larger than 32768 bytes' },
        {
          index: 8,
          code: 'lone_surrogate',
          message: 'properties.bad: holds a lone UTF-16 surrogate',
        },
        {
          index: 9,
          code: 'invalid_event',
          message: 'timestamp: corrected by sentAt, falls outside the years 0001 to 9999',
        },
        { index: 10, code: 'invalid_event', message: 'userId: must be a string or a number' },
      ]);
    });

    it.each([
      ['a fault of its message with 422', track({ event: '!!' }), 422, 'validation_failed'],
      ['an unknown event type with 422', track({ event: 'Nope' }), 422, 'validation_failed'],
      [
        'a message over 32 KiB with 413',
        track({ properties: { blob: 'x'.repeat(33 * 1024) } }),
        413,
        'payload_too_large',
      ],
      ['a body that is no object with 422', [track()], 422, 'validation_failed'],
    ])('refuses a single message endpoint’s request for %s', async (_case, body, status, code) => {
      const response = await postTrackingApi(env, '/v1/track', body, writeKey);
      expect(response.statusCode, response.body).toBe(status);
      expect(response.json().error.code).toBe(code);
    });
  });

  describe('refusals of the whole request', () => {
    it.each<[string, number, string, unknown]>([
      ['a body that is not JSON', 400, 'bad_request', '{"batch": ['],
      ['an empty body', 400, 'bad_request', ''],
      ['a batch that is not an array', 422, 'validation_failed', { batch: {} }],
      ['a batch sentAt that is no time', 422, 'validation_failed', { batch: [], sentAt: 'now' }],
      [
        'more than 1,000 messages',
        413,
        'payload_too_large',
        { batch: Array.from({ length: 1001 }, () => track()) },
      ],
      [
        'a body over 1 MiB',
        413,
        'payload_too_large',
        {
          batch: Array.from({ length: 40 }, () => track({ properties: { b: 'x'.repeat(30_000) } })),
        },
      ],
    ])('answers %s with %i (%s), landing nothing', async (_case, status, code, body) => {
      const landed = await landedBy(async () => {
        const response = await postTrackingApi(env, '/v1/batch', body, writeKey);
        expect(response.statusCode, response.body).toBe(status);
        expect(response.json().error.code).toBe(code);
      });
      expect(landed).toEqual([]);
    });

    it('answers a large batch (checked on worker threads) as it answers a small one', async () => {
      const mixed = (n: number) =>
        Array.from({ length: n }, (_, i) =>
          i % 50 === 7
            ? track({ event: 'Nope', properties: { pad: 'p'.repeat(400) } })
            : i % 50 === 9
              ? track({ timestamp: 'soon' })
              : track({
                  event: 'Page Viewed',
                  messageId: `m-${i}`,
                  properties: { i, pad: 'p'.repeat(400) },
                }),
        );
      const small = await batch(mixed(40));
      let large = small;
      const landed = await landedBy(async () => {
        large = await batch(mixed(400));
      });
      expect(JSON.stringify({ batch: mixed(400) }).length).toBeGreaterThan(64 * 1024);
      expect(large.statusCode).toBe(200);
      expect(large.json().accepted).toBe(384);
      expect(large.json().rejected.slice(0, 2)).toEqual(small.json().rejected);
      expect(small.json().rejected).toEqual([
        {
          index: 7,
          code: 'unknown_event_type',
          message: 'name: event type nope is not registered',
        },
        { index: 9, code: 'invalid_event', message: 'timestamp: must be an ISO 8601 timestamp' },
      ]);
      expect(landed).toHaveLength(384);
      expect(landed.map((event) => event.properties.i)).toEqual(
        mixed(400).flatMap((_, i) => (i % 50 === 7 || i % 50 === 9 ? [] : [i])),
      );
    });
  });

  describe('write keys', () => {
    let revoked: string;
    beforeAll(async () => {
      const minted = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
        kind: 'collector',
        name: 'old',
        workspace_id: 'eu',
      });
      revoked = minted.json().token;
      await call(
        env.app,
        tokens.tenant,
        'DELETE',
        `/v1/tenants/acme/tokens/${minted.json().token_id}`,
      );
    });

    const send = (headers: Record<string, string>, body: Record<string, unknown> = {}) =>
      env.app.inject({
        method: 'POST',
        url: '/v1/batch',
        headers: { 'content-type': 'application/json', ...headers },
        payload: JSON.stringify({ batch: [track()], ...body }),
      });

    type Credentials = () => [Record<string, string>, Record<string, unknown>];
    it.each<[string, number, Credentials, string]>([
      [
        'Basic auth, the key as username',
        200,
        () => [{ authorization: basicAuth(writeKey) }, {}],
        '',
      ],
      [
        'Basic auth with a password (ignored)',
        200,
        () => [{ authorization: basicAuth(writeKey, 'secret') }, {}],
        '',
      ],
      ['a bearer token', 200, () => [{ authorization: `Bearer ${writeKey}` }, {}], ''],
      ['writeKey in the body', 200, () => [{}, { writeKey }], ''],
      [
        'Basic auth, before a writeKey in the body',
        200,
        () => [{ authorization: basicAuth(writeKey) }, { writeKey: 'cpc_nothing' }],
        '',
      ],
      ['no key at all', 401, () => [{}, {}], 'missing write key'],
      [
        'an unknown key',
        401,
        () => [{ authorization: basicAuth('cpc_unknown') }, {}],
        'unknown or revoked',
      ],
      ['a revoked key', 401, () => [{}, { writeKey: revoked }], 'unknown or revoked'],
      [
        'another scheme',
        401,
        () => [{ authorization: `Token ${writeKey}` }, {}],
        'neither Basic nor Bearer',
      ],
      [
        'a tenant token',
        403,
        () => [{ authorization: basicAuth(tokens.tenant) }, {}],
        'not an API token',
      ],
      [
        'a tenant-wide collector token',
        403,
        () => [{ authorization: basicAuth(tokens.collector) }, {}],
        'minted for one workspace',
      ],
    ])('answers %s with %i', async (_case, status, credentials, message) => {
      const [headers, body] = credentials();
      const response = await send(headers, body);
      expect(response.statusCode, response.body).toBe(status);
      if (status === 200) {
        expect(response.json()).toEqual({ success: true, accepted: 1, rejected: [] });
      } else {
        expect(response.json().error.message).toContain(message);
      }
    });

    it('reads any content type, or none, as JSON', async () => {
      for (const contentType of ['text/plain', 'application/octet-stream', undefined]) {
        const response = await env.app.inject({
          method: 'POST',
          url: '/v1/track',
          headers: {
            authorization: basicAuth(writeKey),
            ...(contentType ? { 'content-type': contentType } : {}),
          },
          payload: JSON.stringify(track()),
        });
        expect(response.statusCode, `${contentType}: ${response.body}`).toBe(200);
      }
    });
  });

  describe('each endpoint', () => {
    it.each([
      ['track', { event: 'Order Completed', properties: { order_id: 'o1' } }, 'order_completed'],
      ['identify', { traits: { plan: 'gold' } }, 'identify'],
      ['page', { name: 'Home' }, 'page'],
      ['screen', { name: 'Home' }, 'screen'],
      ['alias', { previousId: 'visitor-0' }, 'alias'],
      ['group', { groupId: 'g1' }, 'group'],
    ])(
      'POST /v1/%s answers 200 {"success": true} once its event is on disk',
      async (type, fields, name) => {
        const [event] = await landedBy(async () => {
          const response = await postTrackingApi(
            env,
            `/v1/${type}`,
            // The endpoint gives the type; a message's own `type` is not needed.
            { userId: 'user-1', messageId: `${type}-1`, ...fields },
            writeKey,
          );
          expect(response.statusCode, response.body).toBe(200);
          expect(response.json()).toEqual({ success: true });
        });
        expect(event?.name).toBe(name);
        expect(event?.workspace_id).toBe('eu');
      },
    );

    it('answers a message of writeKey in the body on a single endpoint', async () => {
      const response = await postTrackingApi(env, '/v1/identify', { userId: 'u', writeKey }, null);
      expect(response.statusCode, response.body).toBe(200);
    });
  });
});

describe('Segment-spec rate limits', () => {
  let env: TestEnv;
  afterEach(() => env.close());

  it('share each collector token’s budget with /v1/server/events and count refusals by address', async () => {
    env = await openTestEnv({
      collector: true,
      config: { collector_rate_limit: 3, refused_rate_limit: 2 },
    });
    const tokens = await seedTenants(env.context);
    await registerEventTypes(env, tokens.tenant);
    const writeKey = await mintWriteKey(env, tokens.tenant);
    env.clock.advance(1000);
    const message = { userId: 'u', event: 'Signed Up' };
    const server = await call(env.app, writeKey, 'POST', '/v1/server/events/batch', { events: [] });
    expect(server.statusCode).toBe(202);
    const statuses: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      statuses.push((await postTrackingApi(env, '/v1/track', message, writeKey)).statusCode);
    }
    expect(statuses).toEqual([200, 200, 429]);

    env.clock.advance(1000);
    const refused: number[] = [];
    for (let i = 0; i < 3; i += 1) {
      refused.push((await postTrackingApi(env, '/v1/track', message, 'cpc_unknown')).statusCode);
    }
    expect(refused).toEqual([401, 401, 429]);
    // An address out of refusals is refused before its body is read, key or not.
    expect(
      (await postTrackingApi(env, '/v1/track', { ...message, writeKey }, null)).statusCode,
    ).toBe(429);
    expect((await postTrackingApi(env, '/v1/track', message, writeKey)).statusCode).toBe(200);
  });
});
