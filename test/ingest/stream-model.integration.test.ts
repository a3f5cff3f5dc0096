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
 * Random streams through the real ingest (collector → landing files → LandingLoop.drain on a DuckDB
 * file): (a) one batch, one event a batch and random cuts give the same profiles, identifiers,
 * events, metric values and segment members; (b) those match the reference model of
 * test/helpers/stream-model.ts. CDS_STREAM_SEED, CDS_STREAM_RUNS and CDS_STREAM_MIN_RUNS override
 * the bounds.
 */
const SEED = Number(process.env.CDS_STREAM_SEED ?? 240_024);
/**
 * Bounded by this count, not by time, so the file runs beside the other in-process files: every
 * run checks the same 10 streams however loaded the machine is.
 */
const RUNS = Number(process.env.CDS_STREAM_RUNS ?? 10);
/** A run the time limit stops before this many streams fails: it says so instead of testing less. */
const MIN_RUNS = Number(process.env.CDS_STREAM_MIN_RUNS ?? RUNS);
/** A counterexample to run alone (its JSON as printed on failure), for debugging. */
const REPLAY = process.env.CDS_STREAM_REPLAY;
/**
 * fast-check stops starting new runs (and shrinking) after this long: what bounds the shrinking
 * of a failure. Unloaded, the 10 streams take about 45 s; at a load of 12 on the 2-core machine
 * about 16 s each, which still fits.
 */
const TIME_LIMIT_MS = Number(process.env.CDS_STREAM_TIME_LIMIT_MS ?? 240_000);
/** Streams hold MIN_EVENTS to MAX_EVENTS events: fewer rarely merge, more cost seconds a run. */
const MIN_EVENTS = 10;
const MAX_EVENTS = 22;

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

/**
 * A handful of customers, each with its identifiers in several spellings. Two share the family
 * email, and Meera also gives Asha's phone: where they meet, limits decide between a merge and a
 * conflict.
 */
const CUSTOMERS: Record<string, string[]>[] = [
  {
    email: ['asha@shop.test', ' Asha@Shop.test ', 'ASHA@SHOP.TEST'],
    phone: ['98765 43210', '+91 98765 43210', '+919876543210'],
    user_id: ['u1', ' u1 '],
    device_id: ['d1'],
    cookie: ['k1', ' k1'],
  },
  {
    email: ['ravi@shop.test', 'Ravi@shop.test'],
    phone: ['91234 56789', '09123456789', '+91 91234 56789'],
    user_id: ['u2'],
    device_id: ['d2'],
    cookie: ['k2'],
  },
  {
    email: ['family@shop.test', ' Family@shop.test'],
    phone: ['80000 12345'],
    user_id: ['u3'],
    device_id: ['d3'],
    cookie: ['k3'],
  },
  {
    email: ['family@shop.test', 'meera@shop.test'],
    phone: ['+91 98765 43210'],
    user_id: ['u4'],
    device_id: ['d3'],
    cookie: ['k4'],
  },
];
/** Placeholders in every spelling: built-in ones, and the tenant's (TENANT_PLACEHOLDERS). */
const NOISE: Record<string, string[]> = {
  email: ['N/A', ' none ', 'test@test.com', ' Nobody@Acme.test', 'Anonymous'],
  phone: ['0000000000', '+91 00000 00000', '1234567890', 'n/a', '12'],
  user_id: ['N/A', '-', 'anonymous', ' none '],
  device_id: ['unknown', '0'],
  cookie: ['none', 'Anonymous', 'null'],
};
const TYPES = Object.keys(NOISE);

type Spelling = { source: 'own' | 'other' | 'noise'; other: number; pick: number };

/** One identifier value: mostly the customer's own, sometimes another customer's, or noise. */
const spellingArb = fc.record({
  source: fc.oneof(
    { weight: 8, arbitrary: fc.constant('own' as const) },
    { weight: 1, arbitrary: fc.constant('other' as const) },
    { weight: 2, arbitrary: fc.constant('noise' as const) },
  ),
  other: fc.nat(),
  pick: fc.nat(),
});
const identifierValues = fc
  .record({
    // Asha and Ravi come back most: a customer seen three times or more is where merges happen.
    customer: fc.oneof(
      { weight: 3, arbitrary: fc.constantFrom(0, 1) },
      { weight: 1, arbitrary: fc.constantFrom(2, 3) },
    ),
    // `anon` is the cookie of anon_id, drawn apart from the one in identifiers.
    spellings: fc.record(
      Object.fromEntries([...TYPES, 'anon'].map((type) => [type, spellingArb])),
    ) as fc.Arbitrary<Record<string, Spelling>>,
  })
  .map(({ customer, spellings }) => {
    const values: Record<string, string> = { fax: '555' };
    for (const slot of [...TYPES, 'anon']) {
      const type = slot === 'anon' ? 'cookie' : slot;
      const { source, other, pick } = spellings[slot] as Spelling;
      const choices =
        source === 'noise'
          ? (NOISE[type] as string[])
          : ((
              CUSTOMERS[source === 'own' ? customer : other % CUSTOMERS.length] as Record<
                string,
                string[]
              >
            )[type] as string[]);
      values[slot] = choices[pick % choices.length] as string;
    }
    return values;
  });

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
    source: fc.constantFrom<'browser' | 'server'>('browser', 'server', 'server'),
    name: fc.constantFrom('page_viewed', 'order_completed', 'order_completed', 'signed_up'),
    anon: fc.boolean(),
    serverOrder: fc.shuffledSubarray(['email', 'phone', 'user_id', 'device_id', 'cookie', 'fax'], {
      minLength: 1,
      maxLength: 3,
    }),
    browserOrder: fc.shuffledSubarray(['device_id', 'cookie', 'email'], { maxLength: 2 }),
    values: identifierValues,
    properties: propertiesArb,
    day: fc.constantFrom(...DAYS),
    hour: fc.constantFrom(...HOURS),
    indianOffset: fc.boolean(),
    copy: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.nat() }),
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
      anon: browser || r.anon ? r.values.anon : undefined,
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
  Object.fromEntries(
    [...TIERS.keys()].map((type) => [
      type,
      // Mostly none: limits of 1 on a few types block nearly every merge.
      fc.oneof(
        { weight: 1, arbitrary: fc.constant(1) },
        { weight: 1, arbitrary: fc.constant(2) },
        { weight: 3, arbitrary: fc.constant(null) },
      ),
    ]),
  ),
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
    // A merged-away profile's last_seen_at is left as it was in the batch of its merge, which
    // depends on the cut, and nothing reads it (its id answers the survivor's view). A live
    // profile's is the greatest of its row and the rows ingest appended (migration 019).
    profiles: await session.allText(
      `SELECT p.profile_id, ${ISO('p.created_at')} AS created_at,
         CASE WHEN p.merged_into IS NULL THEN ${ISO('greatest(p.last_seen_at, l.last_seen_at)')} END
           AS last_seen_at,
         p.merged_into
       FROM profiles p
       LEFT JOIN (SELECT profile_id, max(last_seen_at) AS last_seen_at FROM profile_last_seen GROUP BY ALL) l
         USING (profile_id)
       ORDER BY p.profile_id`,
    ),
    identifiers: await session.allText(
      `SELECT identifier_key, identifier_type, profile_id, ${ISO('first_seen_at')} AS first_seen_at
       FROM profile_identifiers ORDER BY identifier_key`,
    ),
    events: await session.allText(
      // An event keeps the profile it was stored with, which depends on the cut: its survivor does not.
      `SELECT e.event_name, e.event_id, coalesce(p.merged_into, e.profile_id) AS profile_id,
         ${ISO('e.occured_at')} AS occured_at
       FROM events e LEFT JOIN profiles p USING (tenant_id, workspace_id, profile_id)
       ORDER BY e.event_name, e.event_id`,
    ),
    merges: await session.allText(
      'SELECT merged_profile_id, survivor_profile_id, event_id FROM profile_merges ORDER BY ALL',
    ),
    conflicts: await session.allText(
      'SELECT profile_id, other_profile_id, event_id FROM identity_conflicts ORDER BY ALL',
    ),
    stats: await session.allText('SELECT events_ingested, duplicates, rejected FROM ingest_stats'),
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
    merges: model.merges
      .map((m) => ({
        merged_profile_id: m.mergedProfileId,
        survivor_profile_id: m.survivorProfileId,
        event_id: m.eventId,
      }))
      .sort((a, b) => byText(JSON.stringify(a), JSON.stringify(b))),
    conflicts: model.conflicts
      .map((c) => ({
        profile_id: c.profileId,
        other_profile_id: c.otherProfileId,
        event_id: c.eventId,
      }))
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
function checkAgainstModel(observed: Observed, model: ReturnType<typeof expected>): void {
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
    [...observed.merges].sort((a, b) => byText(JSON.stringify(a), JSON.stringify(b))),
    'merges',
  ).toEqual(model.merges);
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
    observed.rows
      .filter((row) => row.segment_ids.includes('repeat-buyers'))
      .map((r) => r.profile_id)
      .sort(),
    'segment_ids of the customer table',
  ).toEqual(model.members);
  const [stats] = observed.stats as { duplicates: number; rejected: number }[];
  expect(
    { duplicates: Number(stats?.duplicates), rejected: Number(stats?.rejected) },
    'counters',
  ).toEqual({
    duplicates: model.duplicates,
    rejected: model.rejected,
  });
}

/**
 * (a) and (b) for one stream: whole, one event a batch and the given cuts, each in its own data
 * dir, run side by side (a batch mostly waits for syncs and its checkpoint).
 */
async function checkStream(
  limits: Limits,
  stream: StreamEvent[],
  sizes: number[],
): Promise<Observed> {
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
  return whole.observed;
}

const caseArb = fc.record({
  limits: limitsArb,
  stream: fc
    .array(draftArb, { minLength: MIN_EVENTS, maxLength: MAX_EVENTS, size: 'max' })
    .map(toStream),
  sizes: fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 6 }),
});

describe('ingest under random streams', () => {
  const noLimits: Limits = {
    cookie: null,
    device_id: null,
    email: null,
    phone: null,
    user_id: null,
  };
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

  /** Two merges into one cluster: e3 merges Asha's email profile, e5 the result into u1's. */
  const server = (id: string, at: string, identifiers: [string, string][]): StreamEvent => ({
    source: 'server',
    id,
    name: 'signed_up',
    identifiers,
    properties: {},
    occuredAt: `2026-02-${at}:00:00.000Z`,
    indianOffset: false,
  });
  const twoMerges = [
    server('e1', '28T09', [['email', 'asha@shop.test']]),
    server('e2', '27T09', [['phone', '98765 43210']]),
    server('e3', '28T10', [
      ['email', 'asha@shop.test'],
      ['phone', '+919876543210'],
    ]),
    server('e4', '26T09', [['user_id', 'u1']]),
    server('e5', '28T11', [
      ['phone', '+91 98765 43210'],
      ['user_id', 'u1'],
    ]),
  ];

  it('lists every merge of a cluster with its last survivor, however the merges were cut', async () => {
    // Found by the property: a merge recorded in an earlier batch kept as survivor the profile a
    // later batch merged away, so the survivor's history missed it; in one batch it was listed.
    const observed = await checkStream(noLimits, twoMerges, [3, 2]);
    expect(observed.merges.map((merge) => merge.event_id).sort()).toEqual(['e3', 'e5']);
    expect(new Set(observed.merges.map((merge) => merge.survivor_profile_id)).size).toBe(1);
  }, 60_000);

  it("keeps a merge's record as it was cut, lists it in its cluster's last survivor's history, and erases it with the cluster", async () => {
    const env = await openTestEnv({ collector: true, config: { master_key: MASTER_KEY } });
    try {
      const tokens = await seedTenants(env.context);
      await configure(env, tokens, noLimits);
      await sendCut(env, tokens, twoMerges.slice(0, 3));
      await sendCut(env, tokens, twoMerges.slice(3));
      const rows = (table: string) =>
        env.context.store.read((session) =>
          session.allText<{
            event_id: string;
            merged_profile_id: string;
            survivor_profile_id: string;
          }>(
            `SELECT event_id, merged_profile_id, survivor_profile_id FROM ${table} ORDER BY event_id`,
          ),
        );
      const [first, second] = await rows('profile_merges');
      const survivor = second?.survivor_profile_id ?? '';
      expect(first?.survivor_profile_id).toBe(survivor);
      // The record of e3 names the survivor of its batch, which e5 merged away: no batch rewrote it.
      expect((await rows('profile_merge_records')).map((r) => r.survivor_profile_id)).toEqual([
        second?.merged_profile_id,
        survivor,
      ]);
      const profiles = `/v1/tenants/${TENANT}/workspaces/${WORKSPACE}/profiles`;
      const history = (
        await call(env.app, tokens.tenant, 'GET', `${profiles}/${survivor}/history`)
      ).json() as { entries: { kind: string; merged_profile_id?: string }[] };
      expect(
        history.entries
          .filter((entry) => entry.kind === 'merge')
          .map((entry) => entry.merged_profile_id)
          .sort(),
      ).toEqual([first?.merged_profile_id, second?.merged_profile_id].sort());
      const erased = await call(env.app, tokens.tenant, 'DELETE', `${profiles}/${survivor}`);
      expect(erased.statusCode).toBe(200);
      expect(await rows('profile_merge_records')).toEqual([]);
    } finally {
      await env.close();
    }
  }, 60_000);

  it(
    'gives the same profiles, metrics and members however the stream is cut, as the model says',
    async () => {
      // What the streams exercised, so a generator that stops making merges is noticed.
      const seen = { events: 0, withMerges: 0, withConflicts: 0, withMembers: 0 };
      const details = await fc.check(
        fc.asyncProperty(caseArb, async ({ limits, stream, sizes }) => {
          const observed = await checkStream(limits, stream, sizes);
          seen.events += stream.length;
          if (observed.merges.length > 0) seen.withMerges += 1;
          if (observed.conflicts.length > 0) seen.withConflicts += 1;
          if (observed.members.length > 0) seen.withMembers += 1;
        }),
        {
          seed: SEED,
          numRuns: RUNS,
          interruptAfterTimeLimit: TIME_LIMIT_MS,
          // A stream a failure printed runs first, before the generated ones.
          examples: REPLAY ? [JSON.parse(REPLAY)] : [],
        },
      );
      console.log(
        `stream model: ${details.numRuns} generated streams run (seed ${SEED}; ${seen.events} events; ${seen.withMerges} with merges, ${seen.withConflicts} with conflicts, ${seen.withMembers} with segment members; ${details.numShrinks} shrinks; minimum ${MIN_RUNS}${details.interrupted ? '; stopped by the time limit' : ''})`,
      );
      if (details.failed) {
        console.log(
          fc.defaultReportMessage(details),
          details.errorInstance,
          `\nCDS_STREAM_REPLAY='${JSON.stringify(details.counterexample)}'`,
        );
        expect.fail(`stream model failed with seed ${SEED}: ${fc.defaultReportMessage(details)}`);
      }
      expect(
        details.numRuns,
        `streams run before the time limit (seed ${SEED})`,
      ).toBeGreaterThanOrEqual(MIN_RUNS);
    },
    TIME_LIMIT_MS + 60_000,
  );
});
