import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { sendBrowser, sendServer } from '../helpers/events.js';
import {
  inWindow,
  latestString,
  type ModelRules,
  runModel,
  type StreamEvent,
} from '../helpers/stream-model.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';

/**
 * Random streams through the real ingest (collector → landing files → IngestLoop.drain on a DuckDB
 * file): (a) one batch, one event a batch and random cuts give the same profiles, identifiers,
 * events, metric values and segment members; (b) those match the reference model of
 * test/helpers/stream-model.ts. CDS_STREAM_SEED and CDS_STREAM_RUNS override the bounds.
 */
const SEED = Number(process.env.CDS_STREAM_SEED ?? 240_024);
const RUNS = Number(process.env.CDS_STREAM_RUNS ?? 6);
/** A counterexample to run alone (its JSON as printed on failure), for debugging. */
const REPLAY = process.env.CDS_STREAM_REPLAY;
/** fast-check stops starting new runs (and shrinking) after this long; the file stays < ~90 s. */
const TIME_LIMIT_MS = Number(process.env.CDS_STREAM_TIME_LIMIT_MS ?? 50_000);
const MAX_EVENTS = 24;

const TENANT = 'acme';
const WORKSPACE = 'eu';
/** One master key for every run, so identifier keys and profile ids compare across runs. */
const MASTER_KEY = '5e'.repeat(32);
/** The test clock's day (TestClock starts at 2026-03-01T12:00Z and is never moved here). */
const TODAY = '2026-03-01';
const DAYS = ['2026-02-26', '2026-02-27', '2026-02-28', '2026-03-01', '2026-03-02'];
const HOURS = ['00', '09', '23'];

const TIERS = new Map([
  ['cookie', 'weak'],
  ['device_id', 'weak'],
  ['email', 'strong'],
  ['phone', 'strong'],
  ['user_id', 'strong'],
]);
const TENANT_PLACEHOLDERS = new Map([
  ['*', ['anonymous']],
  ['email', ['nobody@acme.test']],
]);
const DEDUP = new Map([['order_completed', { entity: 'order', fields: ['order_id', 'line'] }]]);

const VALUES: Record<string, { real: string[]; noise: string[] }> = {
  email: {
    real: ['asha@shop.test', ' Asha@Shop.test ', 'ASHA@SHOP.TEST', 'ravi@shop.test', 'family@shop.test', ' Family@shop.test'],
    noise: ['N/A', ' none ', 'test@test.com', ' Nobody@Acme.test', 'Anonymous'],
  },
  phone: {
    real: ['98765 43210', '+91 98765 43210', '+919876543210', '91234 56789', '09123456789'],
    noise: ['0000000000', '+91 00000 00000', '1234567890', 'n/a', '12'],
  },
  user_id: { real: ['u1', 'u2', ' u1 ', 'u3'], noise: ['N/A', '-', 'anonymous', ' none '] },
  device_id: { real: ['d1', 'd2', 'd3'], noise: ['unknown', '0'] },
  cookie: { real: ['k1', 'k2', 'k3', 'k4', ' k1'], noise: ['none', 'Anonymous', 'null'] },
  fax: { real: ['555'], noise: [] },
};

const valueOf = (type: string) => {
  const { real, noise } = VALUES[type] as { real: string[]; noise: string[] };
  return noise.length === 0
    ? fc.constantFrom(...real)
    : fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(...real) },
        { weight: 1, arbitrary: fc.constantFrom(...noise) },
      );
};
const identifierValues = fc.record(
  Object.fromEntries(Object.keys(VALUES).map((type) => [type, valueOf(type)])),
) as fc.Arbitrary<Record<string, string>>;

/** An event before ids are given: `copy` makes it a resend of an earlier event's id and name. */
interface Draft extends Omit<StreamEvent, 'id' | 'identifiers'> {
  order: string[];
  values: Record<string, string>;
  copy: number | null;
}

const cityArb = fc.option(fc.constantFrom<unknown>('Pune', 'pune', 'Delhi', 'Mumbai', 42), {
  nil: undefined,
});
const propertiesArb = fc.record({
  order_id: fc.option(fc.constantFrom('o1', 'o1|7', 'shop|1234'), { nil: undefined }),
  line: fc.constantFrom('1', '7|1', '2'),
  amount: fc.option(fc.constantFrom<unknown>(1, 5, 120, 499, '100', null), { nil: undefined }),
  city: cityArb,
});
const draftArb: fc.Arbitrary<Draft> = fc
  .record({
    source: fc.constantFrom<'browser' | 'server'>('browser', 'server'),
    name: fc.constantFrom('page_viewed', 'order_completed', 'order_completed', 'signed_up'),
    anon: fc.option(valueOf('cookie'), { nil: undefined, freq: 3 }),
    serverOrder: fc.shuffledSubarray(['email', 'phone', 'user_id', 'device_id', 'cookie', 'fax'], {
      maxLength: 3,
    }),
    browserOrder: fc.shuffledSubarray(['device_id', 'cookie', 'email'], { maxLength: 2 }),
    values: identifierValues,
    properties: propertiesArb,
    day: fc.constantFrom(...DAYS),
    hour: fc.constantFrom(...HOURS),
    indianOffset: fc.boolean(),
    copy: fc.option(fc.nat(), { freq: 6 }),
  })
  .map((r) => {
    const browser = r.source === 'browser';
    const { order_id, line, amount, city } = r.properties;
    const properties: Record<string, unknown> =
      r.name === 'order_completed' ? { order_id, line, amount, city } : { city };
    for (const key of Object.keys(properties))
      if (properties[key] === undefined) delete properties[key];
    return {
      source: r.source,
      name: r.name,
      anon: browser ? (r.anon ?? r.values.cookie) : r.anon,
      order: browser ? r.browserOrder : r.serverOrder,
      values: r.values,
      properties,
      occuredAt: `${r.day}T${r.hour}:00:00.000Z`,
      indianOffset: r.indianOffset,
      copy: r.copy,
    };
  });

function toStream(drafts: Draft[]): StreamEvent[] {
  const stream: StreamEvent[] = [];
  for (const [index, draft] of drafts.entries()) {
    const original = draft.copy !== null && index > 0 ? stream[draft.copy % index] : undefined;
    stream.push({
      source: draft.source,
      id: original?.id ?? `e${index}`,
      name: original?.name ?? draft.name,
      ...(draft.anon === undefined ? {} : { anon: draft.anon }),
      identifiers: draft.order.map((type) => [type, draft.values[type] as string]),
      properties: draft.properties,
      occuredAt: draft.occuredAt,
      indianOffset: draft.indianOffset,
    });
  }
  return stream;
}

type Limits = Record<string, 1 | 2 | null>;
const limitsArb: fc.Arbitrary<Limits> = fc.record(
  Object.fromEntries([...TIERS.keys()].map((type) => [type, fc.constantFrom(1, 2, null)])),
) as fc.Arbitrary<Limits>;

/** The envelope the collector receives for a stream event. */
function envelopeOf(event: StreamEvent): Record<string, unknown> {
  const at = event.indianOffset
    ? `${new Date(Date.parse(event.occuredAt) + 5.5 * 3_600_000).toISOString().slice(0, 19)}+05:30`
    : event.occuredAt;
  return {
    envelop_version: '1.0',
    id: event.id,
    name: event.name,
    tenant_id: TENANT,
    workspace_id: WORKSPACE,
    ...(event.anon === undefined ? {} : { anon_id: `cookie:${event.anon}` }),
    occured_at: at,
    properties: {
      ...(event.identifiers.length > 0
        ? { identifiers: Object.fromEntries(event.identifiers) }
        : {}),
      ...event.properties,
    },
  };
}

const METRICS = [
  { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' },
  {
    metric_name: 'recent_orders',
    event_name: 'order_completed',
    value_kind: 'count',
    window_days: 2,
  },
  {
    metric_name: 'spend',
    event_name: 'order_completed',
    value_kind: 'property_number',
    value_path: 'properties.amount',
    window_days: 3,
  },
  ...['order_completed', 'page_viewed'].map((event_name) => ({
    metric_name: 'last_city',
    event_name,
    value_kind: 'property_string',
    value_path: 'properties.city',
    aggregation: 'latest',
  })),
];

async function ok(response: Promise<{ statusCode: number; body: string }>): Promise<void> {
  const answer = await response;
  expect(answer.statusCode, answer.body).toBeLessThan(300);
}

async function configure(env: TestEnv, tokens: Tokens, limits: Limits): Promise<void> {
  const put = (path: string, body: unknown) =>
    ok(call(env.app, tokens.tenant, 'PUT', `/v1/tenants/${TENANT}${path}`, body));
  for (const name of ['page_viewed', 'signed_up']) await put(`/event-types/${name}`, {});
  await put('/event-types/order_completed', {
    dedup_entity: 'order',
    dedup_key_paths: ['properties.order_id', 'properties.line'],
  });
  for (const [type, tier] of TIERS) {
    await put(`/identifier-types/${type}`, { tier, max_per_profile: limits[type] });
  }
  await put('/placeholders', { values: Object.fromEntries(TENANT_PLACEHOLDERS) });
  for (const definition of METRICS) await put('/metric-definitions', definition);
  await put('/segments/repeat-buyers', {
    workspace_id: WORKSPACE,
    display_name: 'Repeat buyers',
    status: 'active',
    predicate: { metric: 'orders', op: 'gte', value: 2 },
  });
}

/** Sends one cut (one request per run of same-source events) and ingests it as one batch. */
async function sendCut(env: TestEnv, tokens: Tokens, cut: StreamEvent[]): Promise<void> {
  let start = 0;
  while (start < cut.length) {
    let end = start;
    while (end < cut.length && cut[end]?.source === cut[start]?.source) end += 1;
    const events = cut.slice(start, end).map(envelopeOf);
    const response =
      cut[start]?.source === 'browser'
        ? await sendBrowser(env, events)
        : await sendServer(env, tokens.collector, events);
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().rejected).toEqual([]);
    start = end;
  }
  await env.ingest();
}

/** Byte order, as DuckDB's ORDER BY (localeCompare would put 'W' after 'f'). */
const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

const ISO = (column: string) => `strftime(${column}, '%Y-%m-%dT%H:%M:%S.%gZ')`;

interface Row {
  profile_id: string;
  metrics: Record<string, unknown>;
  segment_ids: string[];
}

/** Everything the stream decides, read back from the store and the API. */
async function observe(env: TestEnv, tokens: Tokens) {
  const tables = await env.context.store.read(async (session) => ({
    profiles: await session.allText(
      `SELECT profile_id, ${ISO('created_at')} AS created_at, ${ISO('last_seen_at')} AS last_seen_at, merged_into
       FROM profiles ORDER BY profile_id`,
    ),
    identifiers: await session.allText(
      `SELECT identifier_key, identifier_type, profile_id, ${ISO('first_seen_at')} AS first_seen_at
       FROM profile_identifiers ORDER BY identifier_key`,
    ),
    events: await session.allText(
      `SELECT event_name, event_id, profile_id, ${ISO('occured_at')} AS occured_at
       FROM events ORDER BY event_name, event_id`,
    ),
    merges: await session.allText(
      'SELECT merged_profile_id, survivor_profile_id, event_id FROM profile_merges ORDER BY ALL',
    ),
    conflicts: await session.allText(
      'SELECT profile_id, other_profile_id, event_id FROM identity_conflicts ORDER BY ALL',
    ),
    stats: await session.allText(
      'SELECT events_ingested, duplicates, rejected FROM ingest_stats',
    ),
  }));
  const summary = await call(
    env.app,
    tokens.workspace,
    'GET',
    `/v1/tenants/${TENANT}/workspaces/${WORKSPACE}/profiles/summary?limit=500`,
  );
  expect(summary.statusCode, summary.body).toBe(200);
  const rows = (summary.json().profiles as Row[]).map((row) => ({
    profile_id: row.profile_id,
    metrics: row.metrics,
    segment_ids: [...row.segment_ids].sort(),
  }));
  const members = await call(
    env.app,
    tokens.workspace,
    'GET',
    `/v1/tenants/${TENANT}/segments/repeat-buyers/members?workspace_id=${WORKSPACE}&limit=500`,
  );
  expect(members.statusCode, members.body).toBe(200);
  const listed = await call(
    env.app,
    tokens.tenant,
    'GET',
    `/v1/tenants/${TENANT}/segments?workspace_id=${WORKSPACE}`,
  );
  return {
    ...tables,
    rows,
    members: (members.json().members as Row[]).map((row) => row.profile_id).sort(),
    memberCount: (listed.json().segments as { member_count: number }[])[0]?.member_count,
  };
}

type Observed = Awaited<ReturnType<typeof observe>>;

/** Runs the stream cut as given, each cut one batch, in a fresh data dir; answers what it left. */
async function ingestCuts(limits: Limits, cuts: StreamEvent[][]) {
  const env = await openTestEnv({ collector: true, config: { master_key: MASTER_KEY } });
  try {
    const tokens = await seedTenants(env.context);
    await configure(env, tokens, limits);
    await env.ingest();
    for (const cut of cuts) if (cut.length > 0) await sendCut(env, tokens, cut);
    const keys = env.context.keyRing.forTenant(TENANT);
    return { observed: await observe(env, tokens), keyOf: keys.identifierKey.bind(keys) };
  } finally {
    await env.close();
  }
}

function cutBy(stream: StreamEvent[], sizes: number[]): StreamEvent[][] {
  const cuts: StreamEvent[][] = [];
  for (let start = 0, n = 0; start < stream.length; n += 1) {
    const size = sizes[n % sizes.length] as number;
    cuts.push(stream.slice(start, start + size));
    start += size;
  }
  return cuts;
}

/** What the model says the store and the API must show. */
function expected(limits: Limits, stream: StreamEvent[], keyOf: ModelRules['keyOf']) {
  const model = runModel(
    {
      tenantId: TENANT,
      workspaceId: WORKSPACE,
      declaredTypes: [...TIERS.keys()],
      maxPerProfile: new Map(
        Object.entries(limits).filter((entry): entry is [string, 1 | 2] => entry[1] !== null),
      ),
      tenantPlaceholders: TENANT_PLACEHOLDERS,
      dedup: DEDUP,
      keyOf,
    },
    stream,
  );
  const live = [...model.profiles.values()].filter((profile) => profile.mergedInto === null);
  const metrics = new Map(
    live.map((profile) => {
      const events = model.events.filter((e) => e.profileId === profile.profileId);
      const orders = events.filter((e) => e.event.name === 'order_completed');
      const amount = (e: StreamEvent) =>
        typeof e.properties.amount === 'number' ? e.properties.amount : 0;
      const cities = events.flatMap(({ event }) =>
        event.name !== 'signed_up' && typeof event.properties.city === 'string'
          ? [{ at: event.occuredAt, value: event.properties.city }]
          : [],
      );
      return [
        profile.profileId,
        {
          orders: orders.length,
          recent_orders: orders.filter((e) => inWindow(e.event.occuredAt, TODAY, 2)).length,
          spend: orders
            .filter((e) => inWindow(e.event.occuredAt, TODAY, 3))
            .reduce((sum, e) => sum + amount(e.event), 0),
          last_city: latestString(cities),
        },
      ];
    }),
  );
  return {
    profiles: [...model.profiles.values()]
      .map((p) => ({ profile_id: p.profileId, created_at: p.createdAt, merged_into: p.mergedInto }))
      .sort((a, b) => byText(a.profile_id, b.profile_id)),
    identifiers: live
      .flatMap((p) =>
        [...p.identifiers].map(([key, at]) => ({
          identifier_key: key,
          profile_id: p.profileId,
          first_seen_at: at,
        })),
      )
      .sort((a, b) => byText(a.identifier_key, b.identifier_key)),
    events: model.events
      .map((e) => ({ event_name: e.event.name, event_id: e.event.id, profile_id: e.profileId }))
      .sort((a, b) => byText(a.event_name, b.event_name) || byText(a.event_id, b.event_id)),
    conflicts: model.conflicts
      .map((c) => ({ profile_id: c.profileId, other_profile_id: c.otherProfileId, event_id: c.eventId }))
      .sort((a, b) => byText(JSON.stringify(a), JSON.stringify(b))),
    metrics,
    members: [...metrics]
      .filter(([, values]) => values.orders >= 2)
      .map(([id]) => id)
      .sort(),
    duplicates: model.duplicates,
    rejected: model.rejected,
  };
}

/** Checks (b): the store and the API against the model. */
function checkAgainstModel(
  observed: Observed,
  model: ReturnType<typeof expected>,
): void {
  expect(
    observed.profiles.map(({ profile_id, created_at, merged_into }) => ({
      profile_id,
      created_at,
      merged_into,
    })),
    'profiles',
  ).toEqual(model.profiles);
  expect(
    observed.identifiers.map(({ identifier_key, profile_id, first_seen_at }) => ({
      identifier_key,
      profile_id,
      first_seen_at,
    })),
    'identifiers',
  ).toEqual(model.identifiers);
  expect(
    observed.events.map(({ event_name, event_id, profile_id }) => ({
      event_name,
      event_id,
      profile_id,
    })),
    'events',
  ).toEqual(model.events);
  expect(
    [...observed.conflicts].sort((a, b) => byText(JSON.stringify(a), JSON.stringify(b))),
    'conflicts',
  ).toEqual(model.conflicts);
  expect(
    Object.fromEntries(
      observed.rows.map((row) => [
        row.profile_id,
        {
          orders: row.metrics.orders ?? 0,
          recent_orders: row.metrics.recent_orders ?? 0,
          spend: row.metrics.spend ?? 0,
          last_city: row.metrics.last_city ?? null,
        },
      ]),
    ),
    'metric values',
  ).toEqual(Object.fromEntries(model.metrics));
  expect(observed.members, 'segment members').toEqual(model.members);
  expect(observed.memberCount, 'member_count').toBe(model.members.length);
  expect(
    observed.rows.filter((row) => row.segment_ids.includes('repeat-buyers')).map((r) => r.profile_id).sort(),
    'segment_ids of the customer table',
  ).toEqual(model.members);
  const [stats] = observed.stats as { duplicates: number; rejected: number }[];
  expect({ duplicates: Number(stats?.duplicates), rejected: Number(stats?.rejected) }, 'counters').toEqual({
    duplicates: model.duplicates,
    rejected: model.rejected,
  });
}

/**
 * (a) and (b) for one stream: whole, one event a batch and the given cuts, each in its own data
 * dir, run side by side (a batch mostly waits for syncs and its checkpoint).
 */
async function checkStream(limits: Limits, stream: StreamEvent[], sizes: number[]): Promise<void> {
  const [whole, cut, single] = await Promise.all([
    ingestCuts(limits, [stream]),
    ingestCuts(limits, cutBy(stream, sizes)),
    ingestCuts(
      limits,
      stream.map((event) => [event]),
    ),
  ]);
  checkAgainstModel(whole.observed, expected(limits, stream, whole.keyOf));
  expect(cut.observed, `cut in batches of ${sizes.join(', ')}`).toEqual(whole.observed);
  expect(single.observed, 'one event a batch').toEqual(whole.observed);
}

const caseArb = fc.record({
  limits: limitsArb,
  stream: fc.array(draftArb, { minLength: 1, maxLength: MAX_EVENTS }).map(toStream),
  sizes: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 6 }),
});

describe('ingest under random streams', () => {
  const noLimits: Limits = { cookie: null, device_id: null, email: null, phone: null, user_id: null };
  const order = (id: string, email: string): StreamEvent => ({
    source: 'server',
    id,
    name: 'order_completed',
    identifiers: [['email', email]],
    properties: { order_id: 'o1', line: '1', amount: 5 },
    occuredAt: '2026-03-01T09:00:00.000Z',
    indianOffset: false,
  });

  it('stores an order whose first copy in the batch had only placeholder identifiers', async () => {
    // Found by the property: in one batch the first copy (rejected, no_identifiers) took the dedup
    // key and the second was counted a duplicate and lost; one event a batch stored it.
    const stream = [order('e0', 'N/A'), order('e1', 'asha@shop.test')];
    await checkStream(noLimits, stream, [1]);
    const { observed } = await ingestCuts(noLimits, [stream]);
    expect(observed.events.map((event) => event.event_id)).toEqual(['e1']);
    expect(observed.stats).toEqual([{ events_ingested: 1, duplicates: 0, rejected: 1 }]);
  }, 60_000);

  it.runIf(REPLAY)('replays CDS_STREAM_REPLAY', async () => {
    const [{ limits, stream, sizes }] = JSON.parse(REPLAY as string);
    await checkStream(limits, stream, sizes);
  }, 120_000);

  it('gives the same profiles, metrics and members however the stream is cut, as the model says', async () => {
    const details = await fc.check(
      fc.asyncProperty(caseArb, async ({ limits, stream, sizes }) => {
        await checkStream(limits, stream, sizes);
      }),
      { seed: SEED, numRuns: RUNS, interruptAfterTimeLimit: TIME_LIMIT_MS },
    );
    console.log(
      `stream model: ${details.numRuns} generated streams run (seed ${SEED}, ${details.numShrinks} shrinks${details.interrupted ? ', stopped by the time limit' : ''})`,
    );
    if (details.failed) {
      console.log(
        fc.defaultReportMessage(details),
        details.errorInstance,
        `\nCDS_STREAM_REPLAY='${JSON.stringify(details.counterexample)}'`,
      );
      expect.fail(`stream model failed with seed ${SEED}: ${fc.defaultReportMessage(details)}`);
    }
    expect(details.numRuns).toBeGreaterThan(0);
  }, 120_000);
});
