import fc from 'fast-check';
import {
  deepNesting,
  hostileHeaderValue,
  hostileKey,
  hostileNumber,
  hostileString,
  hostileValue,
  type Json,
  type JsonObject,
  jsonObject,
  jsonText,
  liveValue,
  PROTOTYPE_IDS,
  urlText,
  urlValue,
  validOrMutated,
} from './fuzz-values.js';

/** The callers a fuzz request can present, set up with real tokens before the run. */
export const CALLERS = [
  'operator',
  'tenant',
  'workspace',
  'otherWorkspace',
  'collector',
  'revoked',
  'otherTenant',
] as const;
export type Caller = (typeof CALLERS)[number];

/** What the store holds before the run, so that generated requests can name real things. */
export interface FuzzFixture {
  tokens: Record<Caller, string>;
  /** Tenant `acme`: workspaces, event types, metrics and segments the requests may name. */
  tenant: string;
  workspaces: string[];
  eventTypes: string[];
  /** Metric names by the shape a predicate compares them as. */
  metrics: { number: string[]; string: string[] };
  segments: string[];
  profileIds: string[];
  /** Tenants other than `tenant`, with those the run creates added as it goes. */
  otherTenants: string[];
  /** Tokens the run may revoke (never the ones in `tokens`), with those it issues added. */
  spareTokenIds: string[];
  /** The secrets of the spare tokens and of those the run issues, presented as callers too. */
  spareTokens: string[];
  allowedOrigin: string;
  /** Where snapshots may be written, and paths they must refuse. */
  snapshotDir: string;
  databasePath: string;
  dataDir: string;
}

export interface FuzzRequest {
  /** `METHOD /path/:param`, as `listRoutes` names it. */
  route: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

interface RouteInput {
  /** Who reaches the handler; other callers are tried too, less often. */
  callers: readonly Caller[];
  /** Query keys the route reads and values that name something real. */
  query?: (fixture: FuzzFixture) => Record<string, readonly string[]>;
  /** A body of the shape the route's schema takes; it is sent as is or mutated. */
  body?: (fixture: FuzzFixture) => fc.Arbitrary<JsonObject>;
  /** Body fields no mutation touches. */
  kept?: readonly string[];
  /** Headers the route reads besides authorization and content-type: valid ones, and any. */
  headers?: {
    valid: (fixture: FuzzFixture) => fc.Arbitrary<Record<string, string>>;
    any: (fixture: FuzzFixture) => fc.Arbitrary<Record<string, string>>;
  };
  /** A preflight: the path is one of these rather than the route's. */
  paths?: { valid: readonly string[]; any: fc.Arbitrary<string> };
}

/**
 * Who reaches tenant routes. The operator may act on every tenant, so through it ids that name no
 * tenant of a token reach the handlers too.
 */
const TENANT_CALLERS: readonly Caller[] = ['tenant', 'operator'];
const MEMBER_CALLERS: readonly Caller[] = ['workspace', 'tenant', 'operator'];

/** Values that name something real, per path parameter. */
const PARAMS: Record<string, (fixture: FuzzFixture) => fc.Arbitrary<string>> = {
  tenant: (fixture) =>
    fc.oneof(
      { weight: 3, arbitrary: fc.constant(fixture.tenant) },
      { weight: 1, arbitrary: liveValue(fixture.otherTenants) },
    ),
  workspace: (fixture) => fc.constantFrom(...fixture.workspaces),
  event_name: (fixture) => fc.constantFrom(...fixture.eventTypes),
  segment_id: (fixture) => fc.constantFrom(...fixture.segments),
  profile_id: (fixture) => fc.constantFrom(...fixture.profileIds),
  token_id: (fixture) => liveValue(fixture.spareTokenIds),
  type: () =>
    fc.constantFrom('email', 'phone', 'cookie', 'device_id', 'customer_id', ...PROTOTYPE_IDS),
  key: (fixture) =>
    fc.oneof(
      { weight: 3, arbitrary: liveValue(fixture.spareTokens) },
      { weight: 1, arbitrary: hostileString },
    ),
  file: () =>
    fc.oneof(
      fc.constantFrom(
        'queryString.bundle.34b193ada8fe288d1bd1.js',
        'standalone.js',
        '..%2Fpackage.json',
      ),
      hostileString,
    ),
};

/** Adds what a successful answer created to the pools later requests draw from. */
export function learn(fixture: FuzzFixture, request: FuzzRequest, status: number, body: string) {
  if (status !== 201) return;
  const created = JSON.parse(body);
  if (request.route === 'POST /v1/operator/tenants') fixture.otherTenants.push(created.tenant_id);
  if (request.route === 'POST /v1/tenants/:tenant/tokens') {
    fixture.spareTokenIds.push(created.token_id);
    fixture.spareTokens.push(created.token);
  }
}

const PROTOTYPE_KEYS = ['constructor', '__proto__', 'toString', 'hasOwnProperty'];
const LIMITS = ['1', '2', '100', '500'];
const optionalOf = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });
/** A record without the keys whose value came out undefined. */
const present = (entries: Record<string, Json | undefined>): JsonObject =>
  jsonObject(
    Object.entries(entries).filter((entry): entry is [string, Json] => entry[1] !== undefined),
  );
const textOf = (valid: readonly string[], weight = 4) =>
  fc.oneof(
    { weight, arbitrary: fc.constantFrom(...valid) },
    { weight: 1, arbitrary: hostileString },
  );

const propertyPath = fc.constantFrom(
  'properties.amount',
  'properties.order_id',
  'properties.page',
  'properties.identifiers.email',
  'properties.identifiers.phone',
  'properties.constructor',
  'properties.__proto__',
  'properties.a.b.c',
  'properties.$x',
  'properties',
  'identifiers.email',
);

/** A comparison the predicate rules take, or now and then one they do not. */
function comparison(fixture: FuzzFixture): fc.Arbitrary<JsonObject> {
  const { number: numbers, string: strings } = fixture.metrics;
  const text = fc.oneof({ weight: 4, arbitrary: fc.constantFrom('/home', 'a') }, hostileString);
  return fc
    .oneof(
      {
        weight: 4,
        arbitrary: fc.record({
          metric: fc.constantFrom(...numbers),
          op: fc.constantFrom('eq', 'ne', 'gt', 'gte', 'lt', 'lte'),
          value: fc.oneof(fc.integer({ min: -5, max: 5 }), hostileNumber),
        }),
      },
      fc.record({
        metric: fc.constantFrom(...strings),
        op: fc.constantFrom('eq', 'ne', 'contains'),
        value: text,
      }),
      fc.record({
        metric: fc.constantFrom(...strings),
        op: fc.constantFrom('in', 'not_in'),
        value: fc.array(text, { minLength: 1, maxLength: 4 }),
      }),
      fc.record({
        metric: fc.constantFrom(...numbers, ...strings),
        op: fc.constant('exists'),
        value: fc.boolean(),
      }),
      fc.record({
        metric: textOf([...numbers, ...strings]),
        op: textOf(['eq', 'gt', 'in', 'contains', 'exists']),
        value: hostileValue,
      }),
    )
    .map((fields) => jsonObject(Object.entries(fields)));
}

function predicate(fixture: FuzzFixture): fc.Arbitrary<JsonObject> {
  const { node } = fc.letrec<{ node: JsonObject }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      comparison(fixture),
      fc.array(tie('node'), { minLength: 1, maxLength: 4 }).map((of) => jsonObject([['all', of]])),
      fc.array(tie('node'), { minLength: 1, maxLength: 4 }).map((of) => jsonObject([['any', of]])),
      tie('node').map((of) => jsonObject([['not', of]])),
    ),
  }));
  return node;
}

/** Identifier types that a JSON path, a SQL string or a plain object reads as something else. */
const PATH_KEYS = [
  '$',
  '$x',
  '$id',
  '$email',
  '$.a',
  '$[0]',
  'a.b',
  '.',
  '"',
  "'",
  '[',
  ']',
  '*',
  'a b',
  '',
  ...PROTOTYPE_KEYS,
];

function identifiers(): fc.Arbitrary<JsonObject> {
  const type = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom('email', 'phone', 'cookie', 'device_id', 'customer_id'),
    },
    { weight: 3, arbitrary: fc.constantFrom(...PATH_KEYS) },
    { weight: 1, arbitrary: hostileKey },
  );
  const value = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        'ada@example.com',
        'ADA@Example.com ',
        '+91 99999 99999',
        '9999999999',
        '+44 20 7946 0958',
        'visitor-1',
      ),
    },
    { weight: 3, arbitrary: hostileValue },
  );
  return fc.array(fc.tuple(type, value), { maxLength: 4 }).map((entries) => jsonObject(entries));
}

/** An envelope for the collector's scope (tenant acme), sometimes wrong in one or more fields. */
function envelope(fixture: FuzzFixture, source: 'browser' | 'server'): fc.Arbitrary<JsonObject> {
  const properties = fc
    .tuple(
      fc.oneof(
        { weight: 3, arbitrary: identifiers() },
        { weight: 1, arbitrary: fc.constant(undefined) },
      ),
      fc.array(
        fc.tuple(
          fc.oneof(fc.constantFrom('amount', 'order_id', 'page'), hostileKey),
          fc.oneof(hostileValue, fc.integer(), fc.constantFrom('/home', 'o-1')),
        ),
        { maxLength: 3 },
      ),
      // Rare: an event nested too deep is refused, and takes its batch with it while it 500s.
      fc.oneof(
        { weight: 9, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: deepNesting },
      ),
    )
    .map(([ids, fields, deep]) =>
      jsonObject([
        ...(ids ? [['identifiers', ids] as const] : []),
        ...fields,
        ...(deep ? [['nested', deep] as const] : []),
      ]),
    );
  const timestamp = fc.oneof(
    {
      weight: 9,
      arbitrary: fc
        .date({ min: new Date('2000-01-01'), max: new Date('2030-01-01'), noInvalidDate: true })
        .map((date) => date.toISOString()),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        '2026-13-01T00:00:00Z',
        '+275760-09-13T00:00:00.000Z',
        '0000-01-01T00:00:00Z',
        '1969-12-31T23:59:59.999999999+14:00',
        '2026-03-01T10:00:00.000-23:59',
        '2026-02-30T00:00:00Z',
      ),
    },
  );
  return fc
    .record({
      envelop_version: fc.oneof({ weight: 9, arbitrary: fc.constant('1.0') }, hostileString),
      id: fc.oneof({ weight: 9, arbitrary: fc.uuid() }, hostileString),
      name: textOf(fixture.eventTypes, 9),
      tenant_id: textOf([fixture.tenant], 9),
      workspace_id: textOf(source === 'browser' ? ['eu'] : fixture.workspaces, 9),
      anon_id: fc.oneof(
        {
          weight: 9,
          arbitrary: fc.string({ minLength: 1, maxLength: 12 }).map((v) => `cookie:${v}`),
        },
        hostileString,
        fc.constant(undefined),
      ),
      occured_at: timestamp,
      properties,
    })
    .map(present);
}

function events(fixture: FuzzFixture, source: 'browser' | 'server'): fc.Arbitrary<JsonObject> {
  const event = fc.oneof(
    { weight: 3, arbitrary: envelope(fixture, source) },
    { weight: 1, arbitrary: validOrMutated(envelope(fixture, source)) },
  );
  return fc.oneof(
    {
      weight: 9,
      arbitrary: fc.array(event, { maxLength: 8 }).map((list) => jsonObject([['events', list]])),
    },
    {
      // Over the 1,000 events a batch may hold, each of them valid.
      weight: 1,
      arbitrary: fc.uuid().map((id) => {
        const one = jsonObject([
          ['envelop_version', '1.0'],
          ['id', id],
          ['name', fixture.eventTypes[0] ?? 'page_viewed'],
          ['tenant_id', fixture.tenant],
          ['workspace_id', 'eu'],
          ['anon_id', 'cookie:v1'],
          ['occured_at', '2026-03-01T10:00:00.000Z'],
        ]);
        return jsonObject([['events', Array.from({ length: 1001 }, () => one)]]);
      }),
    },
  );
}

const browserScope = (fixture: FuzzFixture) =>
  fc
    .option(fc.constant(fixture.allowedOrigin), { nil: undefined })
    .map((origin) =>
      definedOnly({ 'x-tenant-id': fixture.tenant, 'x-workspace-id': 'eu', origin }),
    );

const anyBrowserHeaders = (fixture: FuzzFixture) =>
  fc
    .record({
      'x-tenant-id': optionalOf(
        fc.oneof({ weight: 4, arbitrary: fc.constant(fixture.tenant) }, hostileHeaderValue),
      ),
      'x-workspace-id': optionalOf(
        fc.oneof({ weight: 4, arbitrary: fc.constant('eu') }, hostileHeaderValue),
      ),
      origin: optionalOf(
        fc.oneof(
          { weight: 3, arbitrary: fc.constant(fixture.allowedOrigin) },
          fc.constantFrom('https://evil.test', 'null', 'http://localhost'),
          hostileHeaderValue,
        ),
      ),
    })
    .map(definedOnly);

function definedOnly(headers: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).filter((entry): entry is [string, string] => entry[1] !== undefined),
  );
}

/** A delete's `?dry_run`: said as the API takes it, or not. */
const DRY_RUNS = ['true', 'false', 'TRUE', '1'] as const;
const workspaceQuery = (fixture: FuzzFixture) => ({ workspace_id: fixture.workspaces });
const pagingQuery = (fixture: FuzzFixture) => ({
  limit: LIMITS,
  cursor: BAD_CURSORS,
  workspace_id: fixture.workspaces,
});

/** The live view's filters: names and outcomes that exist, a profile id of the right shape. */
const liveEventFilters = (fixture: FuzzFixture) => ({
  name: fixture.eventTypes,
  outcome: ['stored', 'duplicate', 'rejected', 'quarantined'],
  profile_id: ['p_000000000000000000000000'],
});

/** Cursors shaped like the ones the routes hand out, with contents they never hand out. */
const BAD_CURSORS = [
  '{}',
  '[]',
  'null',
  '"x"',
  '{"w":1,"s":2}',
  '{"w":"eu","s":"\\ud800"}',
  '{"__proto__":{"w":"eu","s":"a"}}',
  '{"p":"p_000000000000000000000000"}',
  `{"p":"${'x'.repeat(2000)}"}`,
  '{"at":"not a time","kind":"event","ref":"x"}',
  '{"at":"9999-99-99T99:99:99Z","kind":"merge","ref":"x"}',
  '{"a":"2026-13-45","i":"x"}',
  '{"a":"","i":""}',
  '{"a":"not a time","f":"x","i":"y","r":"z"}',
  '{"a":"2026-03-01T00:00:00Z","f":1,"i":"y","r":"z"}',
].map((json) => Buffer.from(json).toString('base64url'));

/** A Segment-spec message of `type` (issue 19): names, ids and traits hostile or real. */
function segmentMessage(fixture: FuzzFixture, type: string): fc.Arbitrary<JsonObject> {
  return fc
    .record({
      type: fc.oneof({ weight: 6, arbitrary: fc.constant(type) }, hostileString),
      messageId: optionalOf(fc.oneof(fc.uuid(), hostileString)),
      event: optionalOf(
        fc.oneof(fc.constantFrom(...fixture.eventTypes, 'Order Completed'), hostileString),
      ),
      userId: optionalOf(fc.oneof(fc.constant('u-1'), hostileString)),
      anonymousId: optionalOf(fc.oneof(fc.constant('visitor-1'), hostileString)),
      previousId: optionalOf(hostileString),
      timestamp: optionalOf(fc.oneof(fc.constant('2026-03-01T10:00:00Z'), hostileString)),
      sentAt: optionalOf(fc.oneof(fc.constant('2026-03-01T10:00:01Z'), hostileString)),
      properties: optionalOf(hostileValue),
      traits: optionalOf(
        fc.oneof(fc.constant(jsonObject([['email', 'ana@example.com']])), hostileValue),
      ),
      context: optionalOf(hostileValue),
    })
    .map(present);
}

/** Write keys as Segment's libraries send them, a collector token as Basic username, and others. */
const segmentAuthorization = (fixture: FuzzFixture) =>
  fc
    .constantFrom(fixture.tokens.collector, fixture.tokens.tenant, ...fixture.spareTokens)
    .map((key) => ({ authorization: `Basic ${Buffer.from(`${key}:`).toString('base64')}` }));

const anySegmentAuthorization = (fixture: FuzzFixture) =>
  fc.oneof(
    segmentAuthorization(fixture),
    fc.constant({}),
    hostileHeaderValue.map((value) => ({ authorization: `Basic ${value}` })),
  );

const segmentRoute = (type: string): RouteInput => ({
  callers: [],
  headers: { valid: segmentAuthorization, any: anySegmentAuthorization },
  body: (fixture) => segmentMessage(fixture, type),
});

/** Every route of both apps, keyed as `listRoutes` names them. */
export const ROUTE_INPUTS: Record<string, RouteInput> = {
  'GET /healthz': { callers: [] },
  'GET /readyz': { callers: [] },
  'GET /metrics': { callers: ['operator'] },
  'GET /v1/whoami': { callers: CALLERS },
  'OPTIONS *': {
    callers: [],
    paths: {
      valid: ['/v1/events', '/v1/events/batch'],
      any: fc.oneof(
        fc.constantFrom('/v1/events', '/v1/events/batch', '/v1/server/events', '/v1/whoami'),
        hostileString.map((text) => `/${urlText(text)}`),
      ),
    },
    headers: {
      valid: (fixture) =>
        fc.constant({ origin: fixture.allowedOrigin, 'access-control-request-method': 'POST' }),
      any: (fixture) =>
        fc
          .tuple(
            anyBrowserHeaders(fixture),
            optionalOf(fc.constantFrom('POST', 'GET', 'DELETE', 'x')),
            optionalOf(fc.oneof(fc.constant('content-type, x-tenant-id'), hostileHeaderValue)),
          )
          .map(([headers, method, requested]) =>
            definedOnly({
              ...headers,
              'access-control-request-method': method,
              'access-control-request-headers': requested,
            }),
          ),
    },
  },
  'POST /v1/operator/tenants': {
    callers: ['operator'],
    body: () =>
      fc
        .record({
          tenant_id: fc.oneof(
            { weight: 2, arbitrary: fc.constantFrom(...PROTOTYPE_IDS) },
            fc.stringMatching(/^[a-z0-9][a-z0-9_-]{0,63}$/),
            hostileString,
          ),
          workspaces: fc.array(fc.oneof(fc.constantFrom(...PROTOTYPE_IDS, 'eu'), hostileString), {
            maxLength: 3,
          }),
        })
        .map((fields) => jsonObject(Object.entries(fields))),
  },
  'GET /v1/operator/tenants': { callers: ['operator'] },
  'POST /v1/operator/tenants/:tenant/tenant-tokens': {
    callers: ['operator'],
    body: () => fc.record({ name: optionalOf(hostileString) }).map(present),
  },
  'GET /v1/operator/webhooks': {
    callers: ['operator'],
    query: () => ({ status: ['pending', 'delivered', 'failed'], limit: LIMITS }),
  },
  'POST /v1/operator/webhooks/retry': {
    callers: ['operator'],
    body: () => fc.record({ webhook_id: optionalOf(hostileString) }).map(present),
  },
  'GET /v1/operator/quarantine': {
    callers: ['operator'],
    query: () => ({ limit: LIMITS, cursor: BAD_CURSORS }),
  },
  'POST /v1/operator/quarantine/retry': {
    callers: ['operator'],
    body: () => fc.record({ quarantine_id: optionalOf(hostileString) }).map(present),
  },
  'POST /v1/operator/snapshots': {
    callers: ['operator'],
    // The route writes where `path` says, as the user running the tests: only paths in the test's
    // own directory are sent, never a generated one.
    kept: ['path'],
    body: (fixture) =>
      fc
        .record({
          path: fc.constantFrom(
            `${fixture.snapshotDir}/a.duckdb`,
            `${fixture.snapshotDir}/b.duckdb`,
            fixture.snapshotDir,
            fixture.databasePath,
            fixture.dataDir,
            `${fixture.snapshotDir}/missing/x.duckdb`,
            `${fixture.snapshotDir}/nul\u0000.duckdb`,
            `${fixture.snapshotDir}/${'a'.repeat(300)}.duckdb`,
            `${fixture.snapshotDir}/'quote".duckdb`,
          ),
          replace: fc.boolean(),
        })
        .map((fields) => jsonObject(Object.entries(fields))),
  },
  'POST /v1/operator/exports': {
    callers: ['operator'],
    // Written where `dir` says, as for snapshots: only folders in the test's own directory.
    kept: ['dir'],
    body: (fixture) =>
      fc
        .record({
          dir: fc.constantFrom(
            `${fixture.snapshotDir}/export-a`,
            `${fixture.snapshotDir}/export-b`,
            fixture.snapshotDir,
            fixture.databasePath,
            fixture.dataDir,
            `${fixture.snapshotDir}/missing/export`,
            `${fixture.snapshotDir}/nul\u0000`,
            `${fixture.snapshotDir}/${'a'.repeat(300)}`,
            `${fixture.snapshotDir}/'quote"`,
          ),
          format: fc.constantFrom('parquet', 'csv'),
        })
        .map((fields) => jsonObject(Object.entries(fields))),
  },
  'POST /v1/operator/backups': {
    callers: ['operator'],
    // The route writes where `dir` says, as the user running the tests: only folders in the
    // test's own directory are sent, never a generated one.
    kept: ['dir'],
    body: (fixture) =>
      fc
        .record({
          dir: fc.constantFrom(
            `${fixture.snapshotDir}/backup-a`,
            `${fixture.snapshotDir}/backup-b`,
            fixture.snapshotDir,
            fixture.dataDir,
            `${fixture.databasePath}/backup`,
            `${fixture.snapshotDir}/missing/backup`,
            `${fixture.snapshotDir}/nul\u0000backup`,
            `${fixture.snapshotDir}/${'a'.repeat(300)}`,
            'relative/backup',
          ),
          with_key: fc.boolean(),
        })
        .map((fields) => jsonObject(Object.entries(fields))),
  },
  'GET /v1/tenants/:tenant/workspaces': { callers: TENANT_CALLERS },
  'PUT /v1/tenants/:tenant/workspaces/:workspace': {
    callers: ['tenant', 'operator'],
    body: () =>
      fc
        .record({
          display_name: optionalOf(hostileString),
          consent_categories: optionalOf(
            fc.array(fc.oneof(fc.constantFrom('marketing', 'analytics'), hostileString), {
              maxLength: 3,
            }),
          ),
          consent_default: optionalOf(textOf(['allow', 'deny'])),
        })
        .map(present),
  },
  'GET /v1/tenants/:tenant/workspaces/:workspace': { callers: MEMBER_CALLERS },
  'GET /v1/tenants/:tenant/workspaces/:workspace/profiles/lookup': {
    callers: MEMBER_CALLERS,
    query: () => ({
      email: ['ada@example.com', 'ADA%40example.com', 'sentinel@example.com'],
      phone: ['%2B91%2099999%2099999', '9999999999'],
    }),
  },
  'GET /v1/tenants/:tenant/workspaces/:workspace/profiles/summary': {
    callers: MEMBER_CALLERS,
    query: (fixture) => ({
      ...pagingQuery(fixture),
      segment_id: fixture.segments,
      sort_by: [...fixture.metrics.number, ...fixture.metrics.string],
      order: ['asc', 'desc'],
    }),
  },
  'GET /v1/tenants/:tenant/workspaces/:workspace/events': {
    callers: MEMBER_CALLERS,
    query: (fixture) => ({ ...pagingQuery(fixture), ...liveEventFilters(fixture) }),
  },
  'GET /v1/tenants/:tenant/workspaces/:workspace/events/stream': {
    callers: MEMBER_CALLERS,
    query: liveEventFilters,
    headers: {
      valid: () => fc.constant({}),
      any: () =>
        fc.oneof(
          fc.constant({}),
          fc
            .oneof(fc.constantFrom(...BAD_CURSORS), hostileHeaderValue)
            .map((cursor) => ({ 'last-event-id': cursor })),
        ),
    },
  },
  'GET /v1/tenants/:tenant/workspaces/:workspace/profiles/:profile_id': {
    callers: MEMBER_CALLERS,
  },
  'DELETE /v1/tenants/:tenant/workspaces/:workspace/profiles/:profile_id': {
    callers: TENANT_CALLERS,
    query: () => ({ dry_run: DRY_RUNS }),
  },
  'GET /v1/tenants/:tenant/workspaces/:workspace/profiles/:profile_id/history': {
    callers: MEMBER_CALLERS,
    query: pagingQuery,
  },
  'POST /v1/tenants/:tenant/tokens': {
    callers: TENANT_CALLERS,
    body: (fixture) =>
      fc
        .record({
          kind: textOf(['workspace', 'collector', 'write_key', 'tenant', 'operator']),
          workspace_id: optionalOf(fc.oneof(textOf(fixture.workspaces), fc.constant(null))),
          name: textOf(['reader', 'backend']),
        })
        .map(present),
  },
  'GET /v1/tenants/:tenant/tokens': { callers: TENANT_CALLERS },
  'DELETE /v1/tenants/:tenant/tokens/:token_id': { callers: TENANT_CALLERS },
  'GET /v1/tenants/:tenant/identifier-types': { callers: TENANT_CALLERS },
  'PUT /v1/tenants/:tenant/identifier-types/:type': {
    callers: TENANT_CALLERS,
    body: () =>
      fc
        .record({
          tier: textOf(['strong', 'weak']),
          max_per_profile: optionalOf(fc.oneof(fc.integer({ min: 1, max: 1000 }), hostileNumber)),
        })
        .map(present),
  },
  'PUT /v1/tenants/:tenant/placeholders': {
    callers: TENANT_CALLERS,
    body: () =>
      fc
        .array(
          fc.tuple(
            fc.oneof(fc.constantFrom('*', 'email', 'phone', ...PROTOTYPE_IDS), hostileKey),
            fc.array(fc.oneof(fc.constantFrom('9999999999', '+91 99999 99999'), hostileString), {
              maxLength: 3,
            }),
          ),
          { maxLength: 3 },
        )
        .map((entries) => jsonObject([['values', jsonObject(entries)]])),
  },
  'GET /v1/tenants/:tenant/placeholders': { callers: TENANT_CALLERS },
  'GET /v1/tenants/:tenant/event-types': { callers: MEMBER_CALLERS },
  'PUT /v1/tenants/:tenant/event-types/:event_name': {
    callers: TENANT_CALLERS,
    body: () =>
      fc
        .record({
          dedup_entity: optionalOf(textOf(['order'])),
          dedup_key_paths: optionalOf(fc.array(propertyPath, { maxLength: 3 })),
        })
        .map(present),
  },
  'DELETE /v1/tenants/:tenant/event-types/:event_name': {
    callers: TENANT_CALLERS,
    query: () => ({ dry_run: DRY_RUNS }),
  },
  'GET /v1/tenants/:tenant/event-type-counts': { callers: MEMBER_CALLERS, query: workspaceQuery },
  'GET /v1/tenants/:tenant/erasures': { callers: TENANT_CALLERS, query: pagingQuery },
  'GET /v1/tenants/:tenant/rejections': { callers: MEMBER_CALLERS, query: pagingQuery },
  'PUT /v1/tenants/:tenant/metric-definitions': {
    callers: TENANT_CALLERS,
    body: (fixture) =>
      fc
        .record({
          metric_name: fc.oneof(
            fc.stringMatching(/^[a-z][a-z0-9_]{0,63}$/),
            fc.constantFrom(...fixture.metrics.number, ...fixture.metrics.string, ...PROTOTYPE_IDS),
          ),
          event_name: textOf(fixture.eventTypes),
          value_kind: textOf(['count', 'property_number', 'property_string']),
          value_path: optionalOf(propertyPath),
          aggregation: optionalOf(textOf(['latest', 'recent'])),
          keep: optionalOf(fc.oneof(fc.integer({ min: 1, max: 10 }), hostileNumber)),
          window_days: optionalOf(fc.oneof(fc.integer({ min: 1, max: 730 }), hostileNumber)),
          workspace_id: optionalOf(textOf(['*', ...fixture.workspaces])),
          display_name: optionalOf(hostileString),
          description: optionalOf(hostileString),
        })
        .map(present),
  },
  'GET /v1/tenants/:tenant/metric-definitions': {
    callers: MEMBER_CALLERS,
    query: workspaceQuery,
  },
  'DELETE /v1/tenants/:tenant/metric-definitions': {
    callers: TENANT_CALLERS,
    query: (fixture) => ({
      metric_name: [...fixture.metrics.number, ...fixture.metrics.string],
      event_name: fixture.eventTypes,
      workspace_id: ['*', ...fixture.workspaces],
      dry_run: DRY_RUNS,
    }),
  },
  'GET /v1/tenants/:tenant/segments': { callers: MEMBER_CALLERS, query: pagingQuery },
  'GET /v1/tenants/:tenant/segment-metrics': { callers: MEMBER_CALLERS, query: workspaceQuery },
  'POST /v1/tenants/:tenant/segments/preview': {
    callers: TENANT_CALLERS,
    body: (fixture) =>
      fc
        .record({ workspace_id: textOf(fixture.workspaces), predicate: predicate(fixture) })
        .map((fields) => jsonObject(Object.entries(fields))),
  },
  'PUT /v1/tenants/:tenant/segments/:segment_id': {
    callers: TENANT_CALLERS,
    body: (fixture) =>
      fc
        .record({
          workspace_id: textOf(fixture.workspaces),
          display_name: textOf(['Big spenders']),
          predicate: predicate(fixture),
          status: optionalOf(textOf(['draft', 'active', 'paused', 'archived'])),
          automations: optionalOf(
            fc
              .record({ on_enter: fc.boolean(), on_exit: fc.boolean(), on_backfill: fc.boolean() })
              .map((fields) => jsonObject(Object.entries(fields))),
          ),
        })
        .map(present),
  },
  'DELETE /v1/tenants/:tenant/segments/:segment_id': {
    callers: TENANT_CALLERS,
    query: workspaceQuery,
  },
  'GET /v1/tenants/:tenant/segments/:segment_id/definition': {
    callers: MEMBER_CALLERS,
    query: workspaceQuery,
  },
  'GET /v1/tenants/:tenant/segments/:segment_id/members': {
    callers: MEMBER_CALLERS,
    query: pagingQuery,
  },
  'GET /v1/tenants/:tenant/segments/:segment_id/member-counts': {
    callers: MEMBER_CALLERS,
    query: workspaceQuery,
  },
  'GET /v1/tenants/:tenant/segments/:segment_id/webhooks': {
    callers: MEMBER_CALLERS,
    query: (fixture) => ({
      ...pagingQuery(fixture),
      status: ['pending', 'delivered', 'failed', 'lost'],
    }),
  },
  'POST /v1/tenants/:tenant/segments/:segment_id/webhooks/retry': {
    callers: TENANT_CALLERS,
    body: (fixture) =>
      fc
        .record({
          workspace_id: textOf(fixture.workspaces),
          webhook_id: optionalOf(hostileString),
        })
        .map(present),
  },
  'GET /v1/tenants/:tenant/webhooks': {
    callers: MEMBER_CALLERS,
    query: (fixture) => ({
      ...pagingQuery(fixture),
      segment_id: fixture.segments,
      status: ['failed', 'pending', 'delivered', 'lost'],
    }),
  },
  'GET /v1/tenants/:tenant/webhook-totals': { callers: MEMBER_CALLERS, query: workspaceQuery },
  'POST /v1/tenants/:tenant/webhooks/retry': {
    callers: TENANT_CALLERS,
    body: (fixture) =>
      fc
        .record({
          workspace_id: textOf(fixture.workspaces),
          segment_id: optionalOf(textOf(fixture.segments)),
          webhook_id: optionalOf(hostileString),
        })
        .map(present),
  },
  'PUT /v1/tenants/:tenant/segments/:segment_id/status': {
    callers: TENANT_CALLERS,
    body: (fixture) =>
      fc
        .record({
          workspace_id: textOf(fixture.workspaces),
          status: textOf(['draft', 'active', 'paused', 'archived']),
        })
        .map((fields) => jsonObject(Object.entries(fields))),
  },
  'POST /v1/events': {
    callers: [],
    headers: { valid: browserScope, any: anyBrowserHeaders },
    body: (fixture) => envelope(fixture, 'browser'),
  },
  'POST /v1/events/batch': {
    callers: [],
    headers: { valid: browserScope, any: anyBrowserHeaders },
    body: (fixture) => events(fixture, 'browser'),
  },
  'POST /v1/server/events': {
    callers: ['collector'],
    body: (fixture) => envelope(fixture, 'server'),
  },
  'POST /v1/server/events/batch': {
    callers: ['collector'],
    body: (fixture) => events(fixture, 'server'),
  },
  'GET /v1/cds.js': { callers: [] },
  'GET /openapi.json': { callers: [] },
  'GET /docs': { callers: [] },
  'GET /docs/': { callers: [] },
  'GET /docs/*': { callers: [] },
  'GET /docs/json': { callers: [] },
  'GET /docs/yaml': { callers: [] },
  'GET /docs/static/index.html': { callers: [] },
  'GET /docs/static/swagger-initializer.js': { callers: [] },
  'POST /v1/batch': {
    callers: [],
    headers: { valid: segmentAuthorization, any: anySegmentAuthorization },
    body: (fixture) =>
      fc
        .record({
          batch: fc.array(
            fc.oneof(
              ...['track', 'identify', 'page', 'screen', 'alias', 'group'].map((type) =>
                segmentMessage(fixture, type),
              ),
            ),
            { maxLength: 6 },
          ),
          sentAt: optionalOf(fc.constant('2026-03-01T10:00:01Z')),
          writeKey: optionalOf(fc.constantFrom(fixture.tokens.collector, 'cpc_x')),
        })
        .map(present),
  },
  'POST /v1/track': segmentRoute('track'),
  'POST /v1/identify': segmentRoute('identify'),
  'POST /v1/page': segmentRoute('page'),
  'POST /v1/screen': segmentRoute('screen'),
  'POST /v1/alias': segmentRoute('alias'),
  'POST /v1/group': segmentRoute('group'),
  'GET /analytics.js/v1/:key/analytics.min.js': { callers: [] },
  'GET /analytics-next/bundles/:file': { callers: [] },
  'GET /v1/projects/:key/settings': {
    callers: [],
    headers: {
      valid: (fixture) => fc.constant({ origin: fixture.allowedOrigin }),
      any: anyBrowserHeaders,
    },
  },
  'POST /v1/t': segmentRoute('track'),
  'POST /v1/i': segmentRoute('identify'),
  'POST /v1/p': segmentRoute('page'),
  'POST /v1/g': segmentRoute('group'),
  'POST /v1/a': segmentRoute('alias'),
  'POST /v1/s': segmentRoute('screen'),
  'POST /v1/b': {
    callers: [],
    headers: { valid: segmentAuthorization, any: anySegmentAuthorization },
    body: (fixture) =>
      fc
        .record({
          batch: fc.array(segmentMessage(fixture, 'track'), { maxLength: 6 }),
          sentAt: optionalOf(fc.constant('2026-03-01T10:00:01Z')),
          writeKey: optionalOf(liveValue(fixture.spareTokens)),
        })
        .map(present),
  },
  'POST /v1/m': { callers: [] },
  'GET /sourceConfig': {
    callers: [],
    headers: { valid: segmentAuthorization, any: anySegmentAuthorization },
  },
  'GET /sourceConfig/': {
    callers: [],
    headers: { valid: segmentAuthorization, any: anySegmentAuthorization },
  },
};

function authorization(fixture: FuzzFixture, callers: readonly Caller[]) {
  const token = (caller: Caller) => fixture.tokens[caller];
  const malformed = fc.oneof(
    fc.constantFrom(
      'Bearer',
      'Bearer ',
      'Basic YTpi',
      `bearer ${token('tenant')}`,
      `Bearer ${token('tenant')} extra`,
      `Bearer ${token('tenant')}x`,
      `Bearer ${token('operator').slice(0, -1)}`,
      'Bearer cpt_',
      'Bearer cpo_',
      `Bearer cpc_${'a'.repeat(5000)}`,
      `Bearer\t${token('collector')}`,
      `${token('tenant')}`,
    ),
    hostileHeaderValue.map((value) => `Bearer ${value}`),
  );
  const arbitraries: fc.WeightedArbitrary<string | undefined>[] = [
    {
      weight: 2,
      arbitrary: fc.constantFrom(...CALLERS).map((caller) => `Bearer ${token(caller)}`),
    },
    { weight: 2, arbitrary: malformed },
    { weight: 1, arbitrary: fc.constant(undefined) },
  ];
  if (callers.length > 0) {
    arbitraries.push({
      weight: 12,
      arbitrary: fc.constantFrom(...callers).map((caller) => `Bearer ${token(caller)}`),
    });
  }
  return fc.oneof(...arbitraries);
}

const contentType = fc.oneof(
  { weight: 24, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'application/json; charset=latin1',
      'APPLICATION/JSON',
      'application/json, text/plain',
      'application/vnd.api+json',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=x',
      'application/octet-stream',
      '*/*',
      '',
    ),
  },
  { weight: 1, arbitrary: hostileHeaderValue },
);

/** Bodies no schema takes: broken, empty, doubled or over the 1 MiB limit. */
const RAW_BODIES = [
  '',
  '{',
  'null',
  '[]',
  '"\\ud800"',
  '{"a":1}{"b":2}',
  '\ufeff{}',
  '{"a":1,}',
  'NaN',
  '{"__proto__":{"polluted":true}}',
  '{"constructor":{"prototype":{"polluted":true}}}',
  `{"x":"${'a'.repeat(1024 * 1024)}"}`,
];

function bodyFor(fixture: FuzzFixture, input: RouteInput): fc.Arbitrary<string | undefined> {
  const kept = input.kept ?? [];
  const random = fc.oneof(
    {
      weight: 2,
      arbitrary: hostileValue
        .map(jsonText)
        .filter((text) => !kept.some((key) => text.includes(JSON.stringify(key)))),
    },
    { weight: 1, arbitrary: fc.constantFrom(...RAW_BODIES) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
  if (!input.body) return fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, random);
  return fc.oneof(
    { weight: 8, arbitrary: validOrMutated(input.body(fixture), input.kept).map(jsonText) },
    { weight: 2, arbitrary: random },
  );
}

function queryFor(fixture: FuzzFixture, input: RouteInput): fc.Arbitrary<string> {
  const valid = input.query?.(fixture) ?? {};
  const keys = Object.keys(valid);
  const pair = fc.oneof(
    ...(keys.length > 0
      ? [
          {
            weight: 6,
            arbitrary: fc
              .constantFrom(...keys)
              .chain((key) =>
                fc.tuple(
                  fc.constant(key),
                  fc.oneof(
                    { weight: 3, arbitrary: fc.constantFrom(...(valid[key] ?? [])) },
                    { weight: 1, arbitrary: QUERY_VALUE },
                  ),
                ),
              ),
          },
        ]
      : []),
    {
      weight: 1,
      arbitrary: fc.tuple(
        fc.oneof(
          fc.constantFrom(
            '__proto__',
            'constructor',
            'toString',
            'limit[]',
            'a[b]',
            'cursor[0]',
            '%00',
          ),
          hostileString.map(urlText),
        ),
        QUERY_VALUE,
      ),
    },
  );
  return fc
    .array(pair, { maxLength: 5 })
    .map((pairs) => pairs.map(([key, value]) => `${key}=${value}`).join('&'));
}

const QUERY_VALUE = fc.oneof(
  fc.constantFrom(
    '',
    '0',
    '-1',
    '501',
    '1e308',
    '9223372036854775808',
    'NaN',
    'Infinity',
    '1.5',
    '0x10',
    '%205',
    'true',
    'null',
    ...BAD_CURSORS,
  ),
  urlValue(null),
);

function pathFor(fixture: FuzzFixture, pattern: string, hostile: boolean): fc.Arbitrary<string> {
  const parts = pattern.split('/').map((part) => {
    if (!part.startsWith(':')) return fc.constant(part);
    const valid = PARAMS[part.slice(1)];
    if (!valid) throw new Error(`no values for path parameter ${part} of ${pattern}`);
    return hostile ? urlValue(valid(fixture)) : valid(fixture).map(urlText);
  });
  return fc.tuple(...parts).map((values) => values.join('/'));
}

/** Each key the route reads at most once, with a value that names something real. */
function validQueryFor(fixture: FuzzFixture, input: RouteInput): fc.Arbitrary<string> {
  const valid = input.query?.(fixture) ?? {};
  const keys = Object.keys(valid);
  if (keys.length === 0) return fc.constant('');
  return fc
    .subarray(keys)
    .chain((chosen) =>
      fc.tuple(
        ...chosen.map((key) =>
          fc.constantFrom(...(valid[key] ?? [])).map((value) => `${key}=${value}`),
        ),
      ),
    )
    .map((pairs) => pairs.join('&'));
}

/** Where a request puts its hostile part; the other parts are valid, so that it reaches far. */
const FOCUSES = ['path', 'query', 'headers', 'body'] as const;
type Focus = (typeof FOCUSES)[number] | null;

/** Requests for one route: real callers and ids mostly, hostile ones in every part. */
export function requestsFor(fixture: FuzzFixture, route: string): fc.Arbitrary<FuzzRequest> {
  const input = ROUTE_INPUTS[route];
  if (!input) throw new Error(`no fuzz input for ${route}: add it to ROUTE_INPUTS`);
  const [method = '', pattern = ''] = route.split(' ');
  const parts = {
    path: input.paths
      ? { valid: fc.constantFrom(...input.paths.valid), any: input.paths.any }
      : { valid: pathFor(fixture, pattern, false), any: pathFor(fixture, pattern, true) },
    query: { valid: validQueryFor(fixture, input), any: queryFor(fixture, input) },
    authorization: {
      valid:
        input.callers.length > 0
          ? fc.constantFrom(...input.callers).map((caller) => `Bearer ${fixture.tokens[caller]}`)
          : fc.constant(undefined),
      any: authorization(fixture, input.callers),
    },
    extra: {
      valid: input.headers ? input.headers.valid(fixture) : fc.constant({}),
      any: input.headers ? input.headers.any(fixture) : fc.constant({}),
    },
    contentType: { valid: fc.constant('application/json'), any: contentType },
    body: {
      valid: input.body ? input.body(fixture).map(jsonText) : fc.constant(undefined),
      any: bodyFor(fixture, input),
    },
  };
  const build = (focus: Focus) =>
    fc.record({
      path: focus === 'path' ? parts.path.any : parts.path.valid,
      query: focus === 'query' ? parts.query.any : parts.query.valid,
      authorization: focus === 'headers' ? parts.authorization.any : parts.authorization.valid,
      extra: focus === 'headers' ? parts.extra.any : parts.extra.valid,
      contentType: focus === 'headers' ? parts.contentType.any : parts.contentType.valid,
      body: focus === 'body' ? parts.body.any : parts.body.valid,
    });
  return fc
    .oneof(
      { weight: 1, arbitrary: build(null) },
      { weight: 4, arbitrary: fc.constantFrom(...FOCUSES).chain(build) },
    )
    .map(({ path, query, authorization, extra, body, contentType }) => ({
      route,
      method,
      url: query === '' ? path : `${path}?${query}`,
      headers: definedOnly({
        ...extra,
        authorization,
        'content-type': body === undefined ? undefined : contentType,
      }),
      ...(body === undefined ? {} : { body }),
    }));
}

/** For the log of a failure: the request, its body cut short. */
export function describeRequest(request: FuzzRequest): string {
  const body = request.body === undefined ? '' : ` ${request.body.slice(0, 300)}`;
  const cut = request.body !== undefined && request.body.length > 300 ? '…' : '';
  return `${request.method} ${request.url.slice(0, 300)} ${JSON.stringify(request.headers).slice(0, 400)}${body}${cut}`;
}
