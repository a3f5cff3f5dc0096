import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const DAY = 24 * 60 * 60 * 1000;
const SEGMENTS = '/v1/tenants/acme/segments';
const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';
const DEFINITIONS = '/v1/tenants/acme/metric-definitions';

/** An event as the model below reads it, kept beside what was sent. */
interface SentEvent {
  email: string;
  name: string;
  at: Date;
  properties: Record<string, unknown>;
}

type Where = (properties: Record<string, unknown>) => boolean;

/**
 * Each rule in the grammar of design §13, with what it means written again in plain code over the
 * events sent: the test's direct count, against which previews and members are checked.
 */
const RULES: {
  id: string;
  predicate: unknown;
  matches: (events: SentEvent[], today: Date) => boolean;
}[] = [
  {
    id: 'two-orders-and-viewed',
    predicate: {
      all: [
        { event: 'order_completed', op: 'gte', value: 2, within_days: 30 },
        { event: 'product_viewed', op: 'gte', value: 1 },
      ],
    },
    matches: (events, today) =>
      count(events, 'order_completed', today, 30) >= 2 && count(events, 'product_viewed') >= 1,
  },
  {
    id: 'euro-spenders',
    predicate: {
      event: 'order_completed',
      sum: 'properties.total',
      op: 'gte',
      value: 100,
      within_days: 30,
      where: { path: 'properties.currency', op: 'eq', value: 'EUR' },
    },
    matches: (events, today) =>
      sum(events, 'order_completed', 'total', today, 30, (p) => p.currency === 'EUR') >= 100,
  },
  {
    id: 'shoe-browsers',
    predicate: { event: 'product_viewed', latest: 'properties.category', op: 'eq', value: 'shoes' },
    matches: (events) => latest(events, 'product_viewed', 'category') === 'shoes',
  },
  {
    id: 'never-ordered',
    predicate: { event: 'order_completed', op: 'eq', value: 0 },
    matches: (events) => count(events, 'order_completed') === 0,
  },
  {
    id: 'big-coupon-orders-or-not-recent',
    predicate: {
      any: [
        {
          event: 'order_completed',
          op: 'gte',
          value: 1,
          where: {
            all: [
              { path: 'properties.total', op: 'gt', value: 50 },
              { all: [{ path: 'properties.coupon', op: 'exists', value: true }] },
            ],
          },
        },
        {
          not: { event: 'product_viewed', op: 'gte', value: 1, within_days: 7 },
        },
      ],
    },
    matches: (events, today) =>
      count(
        events,
        'order_completed',
        undefined,
        undefined,
        (p) => Number(p.total) > 50 && 'coupon' in p,
      ) >= 1 || !(count(events, 'product_viewed', today, 7) >= 1),
  },
];

/** As metric windows count days: an event of day d is in a D-day window while d > today − D. */
function inWindow(at: Date, today?: Date, days?: number): boolean {
  if (!today || days === undefined) return true;
  const day = Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate());
  const todayStart = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
  return day > todayStart - days * DAY;
}

function count(events: SentEvent[], name: string, today?: Date, days?: number, where?: Where) {
  return events.filter(
    (e) => e.name === name && inWindow(e.at, today, days) && (!where || where(e.properties)),
  ).length;
}

function sum(
  events: SentEvent[],
  name: string,
  field: string,
  today: Date,
  days: number,
  where: Where,
) {
  return events
    .filter((e) => e.name === name && inWindow(e.at, today, days) && where(e.properties))
    .reduce(
      (total, e) =>
        total + (typeof e.properties[field] === 'number' ? (e.properties[field] as number) : 0),
      0,
    );
}

function latest(events: SentEvent[], name: string, field: string): string | undefined {
  const values = events
    .filter((e) => e.name === name && typeof e.properties[field] === 'string')
    .sort((a, b) => a.at.getTime() - b.at.getTime());
  return values.at(-1)?.properties[field] as string | undefined;
}

describe('behaviour in a segment rule', () => {
  let env: TestEnv;
  let tokens: Tokens;
  let sent: SentEvent[];
  let erased: Set<string>;
  let orderNumber = 0;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    sent = [];
    erased = new Set();
  });
  afterEach(async () => {
    await env.close();
  });

  const daysAgo = (days: number, hour = 9) =>
    new Date(env.clock.now().getTime() - days * DAY + (hour - 12) * 60 * 60 * 1000);
  const send = async (...events: (Omit<SentEvent, 'at'> & { daysAgo: number })[]) => {
    const specs: EventSpec[] = [];
    for (const { daysAgo: ago, ...event } of events) {
      const at = daysAgo(ago);
      const properties =
        event.name === 'order_completed'
          ? { order_id: `o${++orderNumber}`, ...event.properties }
          : event.properties;
      sent.push({ ...event, at, properties });
      specs.push({
        name: event.name,
        at: at.toISOString(),
        identifiers: { email: event.email },
        properties,
      });
    }
    const response = await sendServer(env, tokens.collector, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
  };
  const order = (email: string, ago: number, properties: Record<string, unknown> = {}) => ({
    email,
    name: 'order_completed',
    daysAgo: ago,
    properties: { total: 30, currency: 'EUR', ...properties },
  });
  const view = (email: string, ago: number, category = 'bags') => ({
    email,
    name: 'product_viewed',
    daysAgo: ago,
    properties: { sku: `sku-${category}`, category },
  });

  /** Who each rule matches by the test's own count over what was sent and not erased. */
  const expected = (matches: (events: SentEvent[], today: Date) => boolean) => {
    const today = env.clock.now();
    const emails = [...new Set(sent.map((e) => e.email))].filter((email) => !erased.has(email));
    return emails
      .filter((email) =>
        matches(
          sent.filter((e) => e.email === email),
          today,
        ),
      )
      .sort();
  };
  const preview = async (predicate: unknown) => {
    const response = await call(env.app, tokens.tenant, 'POST', `${SEGMENTS}/preview`, {
      workspace_id: 'eu',
      predicate,
      sample_size: 25,
    });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json();
    return {
      matched: body.matched_profiles as number,
      ids: body.sample.map((row: { profile_id: string }) => row.profile_id).sort() as string[],
    };
  };
  const members = async (id: string) => {
    const response = await call(
      env.app,
      tokens.tenant,
      'GET',
      `${SEGMENTS}/${id}/members?workspace_id=eu`,
    );
    expect(response.statusCode, response.body).toBe(200);
    return response.json().members as { profile_id: string; email: string }[];
  };
  const createSegment = async (id: string, predicate: unknown) => {
    const response = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/${id}`, {
      workspace_id: 'eu',
      display_name: id,
      predicate,
    });
    expect(response.statusCode, response.body).toBe(201);
  };
  const profileOf = async (email: string) =>
    (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?email=${email}`)).json()
      .profile_id as string;

  /** Every rule's preview and its segment's members equal the direct count. */
  const expectExact = async (stage: string) => {
    for (const rule of RULES) {
      const want = expected(rule.matches);
      const listed = await members(rule.id);
      expect(listed.map((m) => m.email).sort(), `${stage}: members of ${rule.id}`).toEqual(want);
      const previewed = await preview(rule.predicate);
      expect(previewed.matched, `${stage}: preview of ${rule.id}`).toBe(want.length);
      expect(previewed.ids, `${stage}: preview sample of ${rule.id}`).toEqual(
        listed.map((m) => m.profile_id).sort(),
      );
    }
  };

  it('previews each form exactly before its segment exists, and its members follow events, days and an erasure', async () => {
    await send(
      order('ann@shop.test', 3, { total: 60, coupon: 'SPRING' }),
      order('ann@shop.test', 20),
      view('ann@shop.test', 2, 'shoes'),
      order('bob@shop.test', 5, { total: 80, currency: 'USD' }),
      order('bob@shop.test', 40, { total: 200 }),
      order('bob@shop.test', 26, { total: 90 }),
      view('bob@shop.test', 10, 'shoes'),
      view('bob@shop.test', 1, 'bags'),
      view('cat@shop.test', 4, 'shoes'),
      order('dan@shop.test', 28, { total: 70 }),
      order('dan@shop.test', 29, { total: 45 }),
      view('dan@shop.test', 15),
      // On the windows' edges: 30 and 7 days back are out of a 30- and a 7-day window.
      order('fay@shop.test', 30, { total: 100 }),
      order('fay@shop.test', 29, { total: 10 }),
      view('fay@shop.test', 7),
      { email: 'eve@shop.test', name: 'page_viewed', daysAgo: 1, properties: {} },
    );
    // Before any segment: every behaviour is read from the stored events.
    for (const rule of RULES) {
      const want = expected(rule.matches);
      expect((await preview(rule.predicate)).matched, `first preview of ${rule.id}`).toBe(
        want.length,
      );
      expect(want.length, `the seed gives ${rule.id} someone to find`).toBeGreaterThan(0);
    }
    for (const rule of RULES) await createSegment(rule.id, rule.predicate);
    await env.ingest();
    await expectExact('created');

    await send(order('cat@shop.test', 0, { total: 120 }), order('cat@shop.test', 0, { total: 10 }));
    await expectExact('new orders');

    env.clock.advance(3 * DAY);
    await env.ingest();
    await expectExact('three days on');

    const ann = await profileOf('ann@shop.test');
    const erasedAnswer = await call(env.app, tokens.tenant, 'DELETE', `${PROFILES}/${ann}`);
    expect(erasedAnswer.statusCode, erasedAnswer.body).toBe(200);
    erased.add('ann@shop.test');
    await env.ingest();
    await expectExact('after an erasure');

    env.clock.advance(30 * DAY);
    await env.ingest();
    await expectExact('a month on');
  });

  it('shows what it computes for segments in the metric definitions, refuses their delete, and drops them with the last segment', async () => {
    const rule = { event: 'order_completed', op: 'gte', value: 2, within_days: 30 };
    await createSegment('first', rule);
    await createSegment('second', { all: [rule] });
    const listed = (
      await call(env.app, tokens.tenant, 'GET', `${DEFINITIONS}?workspace_id=eu`)
    ).json().metric_definitions as Record<string, unknown>[];
    expect(listed).toEqual([
      expect.objectContaining({
        workspace_id: 'eu',
        event_name: 'order_completed',
        value_kind: 'count',
        window_days: 30,
        display_name: 'count of order_completed in 30 days',
        where: null,
        computed_for_segments: ['first', 'second'],
      }),
    ]);
    const name = listed[0]?.metric_name as string;
    expect(name).toMatch(/^~[0-9a-f]{16}$/);
    const query = `metric_name=${encodeURIComponent(name)}&event_name=order_completed&workspace_id=eu`;
    const refused = await call(env.app, tokens.tenant, 'DELETE', `${DEFINITIONS}?${query}`);
    expect(refused.statusCode, refused.body).toBe(409);
    expect(
      refused.json().error.details.segments.map((s: { segment_id: string }) => s.segment_id),
    ).toEqual(['first', 'second']);
    const dryRun = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `${DEFINITIONS}?${query}&dry_run=true`,
    );
    expect(dryRun.json().segments.map((s: { segment_id: string }) => s.segment_id)).toEqual([
      'first',
      'second',
    ]);
    // A rule cannot name it as a metric: it is reached through its behaviour only.
    const byName = await call(env.app, tokens.tenant, 'POST', `${SEGMENTS}/preview`, {
      workspace_id: 'eu',
      predicate: { metric: name, op: 'gte', value: 1 },
    });
    expect(byName.statusCode).toBe(422);

    await send(order('ann@shop.test', 1), order('ann@shop.test', 2));
    expect((await members('first')).map((m) => m.email)).toEqual(['ann@shop.test']);
    const ann = await profileOf('ann@shop.test');
    const profile = (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${ann}`)).json();
    expect(profile.metrics, 'a profile shows the catalog metrics only').toEqual({});

    expect(
      (await call(env.app, tokens.tenant, 'DELETE', `${SEGMENTS}/first?workspace_id=eu`))
        .statusCode,
    ).toBe(204);
    const kept = (
      await call(env.app, tokens.tenant, 'GET', `${DEFINITIONS}?workspace_id=eu`)
    ).json().metric_definitions;
    expect(kept.map((d: { computed_for_segments: string[] }) => d.computed_for_segments)).toEqual([
      ['second'],
    ]);
    expect((await members('second')).map((m) => m.email)).toEqual(['ann@shop.test']);

    expect(
      (await call(env.app, tokens.tenant, 'DELETE', `${SEGMENTS}/second?workspace_id=eu`))
        .statusCode,
    ).toBe(204);
    expect(
      (await call(env.app, tokens.tenant, 'GET', `${DEFINITIONS}?workspace_id=eu`)).json()
        .metric_definitions,
    ).toEqual([]);
    const left = await env.context.store.read((session) =>
      session.allText<{ rows: number }>(
        `SELECT (SELECT count(*) FROM profile_metrics) + (SELECT count(*) FROM metric_contributions) AS rows`,
      ),
    );
    expect(left, 'no value computed for the behaviour is left').toEqual([{ rows: 0 }]);
  });

  it('answers 422 with the path of the fault', async () => {
    const cases: [unknown, string][] = [
      [{ event: 'order_shipped', op: 'gte', value: 1 }, 'predicate.event'],
      [
        {
          all: [
            { event: 'order_completed', sum: 'properties.identifiers.email', op: 'gte', value: 1 },
          ],
        },
        'predicate.all[0].sum',
      ],
      [
        {
          event: 'order_completed',
          latest: 'properties.coupon',
          op: 'eq',
          value: 'X',
          within_days: 3,
        },
        'predicate.within_days',
      ],
      [{ event: 'order_completed', op: 'contains', value: 'x' }, 'predicate.op'],
      [{ event: 'order_completed', op: 'exists', value: true }, 'predicate.op'],
      [{ event: 'order_completed', op: 'gte', value: 'two' }, 'predicate.value'],
      [
        { event: 'order_completed', op: 'gte', value: 1, within_days: 731 },
        'predicate.within_days',
      ],
      [
        {
          any: [
            {
              not: {
                event: 'order_completed',
                op: 'gte',
                value: 1,
                where: { path: 'properties.identifiers.email', op: 'eq', value: 'a' },
              },
            },
          ],
        },
        'predicate.any[0].not.where.path',
      ],
      [
        {
          event: 'order_completed',
          op: 'gte',
          value: 1,
          where: { all: [{ path: 'properties.total', op: 'gt', value: 'ten' }] },
        },
        'predicate.where.all[0].value',
      ],
      [
        {
          event: 'order_completed',
          op: 'gte',
          value: 1,
          where: { path: 'properties.total', op: 'between', value: 1 },
        },
        'predicate.where.op',
      ],
      [{ event: 'order_completed', op: 'gte', value: 1, where: { any: [] } }, 'predicate.where'],
      [{ event: 'order_completed', op: 'gte', value: 1, every: 2 }, 'predicate'],
    ];
    for (const [predicate, path] of cases) {
      for (const response of [
        await call(env.app, tokens.tenant, 'POST', `${SEGMENTS}/preview`, {
          workspace_id: 'eu',
          predicate,
        }),
        await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/bad`, {
          workspace_id: 'eu',
          display_name: 'Bad',
          predicate,
        }),
      ]) {
        expect(response.statusCode, JSON.stringify(predicate)).toBe(422);
        expect(
          response.json().error.details.map((d: { path: string }) => d.path),
          JSON.stringify(predicate),
        ).toEqual([path]);
      }
    }
    const nested = {
      event: 'order_completed',
      op: 'gte',
      value: 1,
      where: { path: 'properties.total', op: 'gt', value: 1 } as unknown,
    };
    for (let depth = 0; depth < 8; depth += 1) nested.where = { all: [nested.where] };
    const deep = await call(env.app, tokens.tenant, 'POST', `${SEGMENTS}/preview`, {
      workspace_id: 'eu',
      predicate: nested,
    });
    expect(deep.statusCode).toBe(422);
    expect(deep.json().error.message).toContain('nesting deeper than 8');
    expect(
      (await call(env.app, tokens.tenant, 'GET', `${DEFINITIONS}`)).json().metric_definitions,
    ).toEqual([]);
  });
});
