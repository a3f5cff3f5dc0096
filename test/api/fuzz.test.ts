import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBaseApp } from '../../src/api/base-app.js';
import { collectorRoutes } from '../../src/collector/routes.js';
import { type LandingCollectorRuntime, openFileCollector } from '../../src/collector/runtime.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import { createTenant } from '../../src/tenancy/tenants.js';
import { issueToken } from '../../src/tenancy/tokens.js';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes } from '../helpers/events.js';
import {
  describeRequest,
  type FuzzFixture,
  type FuzzRequest,
  learn,
  ROUTE_INPUTS,
  requestsFor,
} from '../helpers/fuzz-requests.js';
import { operatorReadiness } from '../helpers/readiness.js';
import { listRoutes } from '../helpers/routes.js';
import { call, seedTenants } from '../helpers/tenant.js';

/**
 * Bounds of the run (docs/testing.md): a fixed seed so a failure can be replayed, and a request
 * count, not a time, so the file runs beside the other in-process files and sends the same
 * requests however loaded the machine is. The time budget only bounds the shrinking of a failure;
 * a run it stops before MIN_RUNS requests fails, saying so instead of testing less.
 */
const SEED = Number(process.env.CDS_FUZZ_SEED ?? 1818);
const RUNS = Number(process.env.CDS_FUZZ_RUNS ?? 3000);
const MIN_RUNS = Number(process.env.CDS_FUZZ_MIN_RUNS ?? RUNS);
const TIME_BUDGET_MS = Number(process.env.CDS_FUZZ_TIME_MS ?? 120_000);
/**
 * `cds serve` has 39 routes and `cds collect` 6; the collector gets more than its count's share, as
 * its events also go through ingest.
 */
const SERVE_SHARE = 0.65;

const ORIGIN = 'https://shop.acme.test';

/** Design §6: every refusal, and nothing else. */
const errorBody = z
  .object({
    error: z
      .object({ code: z.string().min(1), message: z.string().min(1), details: z.unknown() })
      .partial({ details: true })
      .strict(),
  })
  .strict();

/** What is wrong with an answer, if anything. */
function faultOf(response: LightMyRequestResponse, method: string): string | null {
  if (response.statusCode >= 500) return `answered ${response.statusCode}`;
  // The docs page's own redirect (swagger-ui's index.html to /docs/) says where to go.
  const redirect = response.statusCode >= 300 && response.statusCode < 400;
  if (redirect && response.headers.location) return null;
  if (response.statusCode < 200 || redirect) return `answered ${response.statusCode}`;
  if (response.statusCode < 400 || method === 'HEAD') return null;
  if (!String(response.headers['content-type']).startsWith('application/json'))
    return `answered ${response.statusCode} as ${response.headers['content-type']}`;
  let body: unknown;
  try {
    body = JSON.parse(response.body);
  } catch {
    return `answered ${response.statusCode} with a body that is not JSON`;
  }
  return errorBody.safeParse(body).success
    ? null
    : `answered ${response.statusCode} without the error body`;
}

interface FailureClass {
  count: number;
  request: FuzzRequest;
  answer: string;
  cause: string;
}

/**
 * Failures grouped by route, fault and cause, each with its shortest request, so one run shows
 * every class it met instead of stopping at the first.
 */
class FailureLog {
  private readonly classes = new Map<string, FailureClass>();

  add(request: FuzzRequest, fault: string, answer: string, cause: Error | undefined): void {
    // An answer that never reached our error handler (Fastify's router, a plugin) is one class
    // whatever the route; an error thrown by our code is one class per route and place.
    const key = cause
      ? `${request.route} ${fault}: ${normalised(firstLine(cause.message))} at ${sourceLine(cause)}`
      : `${fault}: ${normalised(bodyCode(answer))}`;
    const because = cause
      ? `${firstLine(cause.message)} at ${sourceLine(cause)}`
      : 'no error thrown';
    const known = this.classes.get(key);
    if (!known) {
      this.classes.set(key, { count: 1, request, answer, cause: because });
      return;
    }
    known.count++;
    if (describeRequest(request).length < describeRequest(known.request).length) {
      known.request = request;
      known.answer = answer;
    }
  }

  report(): string[] {
    return [...this.classes].map(
      ([key, failure]) =>
        `${failure.count}× ${key}\n    request: ${describeRequest(failure.request)}\n    answer: ${failure.answer.slice(0, 300)}\n    cause: ${failure.cause}`,
    );
  }
}

const firstLine = (text: string) => text.split('\n')[0] ?? '';

/** The first line of our own code in a stack. */
function sourceLine(error: Error): string {
  const line = error.stack?.split('\n').find((frame) => frame.includes('/src/'));
  return line?.replace(/.*\/src\//, 'src/').replace(/\)$/, '') ?? 'outside src/';
}

/** What an answer calls itself: our code, Fastify's `error`, or its first words. */
function bodyCode(answer: string): string {
  const body = answer.slice(answer.indexOf(' ') + 1);
  try {
    const parsed = JSON.parse(body);
    return String(parsed?.error?.code ?? parsed?.code ?? parsed?.error ?? body.slice(0, 60));
  } catch {
    return body.slice(0, 60);
  }
}

/** Messages with their quoted values and numbers taken out, so one cause is one class. */
function normalised(message: string): string {
  return message
    .replace(/"[^"]*"|'[^']*'/g, '"…"')
    .replace(/\d+/g, 'N')
    .slice(0, 160);
}

/** An app whose thrown errors are kept by the request's `x-fuzz-case`, to name the cause of a 5xx. */
function capturingErrors(app: FastifyInstance): Map<string, Error> {
  const errors = new Map<string, Error>();
  app.addHook('onError', async (request, _reply, error) => {
    errors.set(String(request.headers['x-fuzz-case']), error);
  });
  return errors;
}

let caseNumber = 0;

/** Sends one request and logs what is wrong with its answer, if anything. */
/**
 * A live stream does not end: its answer is taken at its head and let go (the app's close ends
 * it); a refusal ends, and is read whole.
 */
async function injectStream(
  app: FastifyInstance,
  options: InjectOptions,
): Promise<LightMyRequestResponse> {
  const head = await app.inject({ ...options, payloadAsStream: true });
  const stream = head.stream();
  let body = '';
  if (head.statusCode === 200) stream.destroy();
  else for await (const chunk of stream) body += String(chunk);
  return { statusCode: head.statusCode, headers: head.headers, body } as LightMyRequestResponse;
}

async function fire(
  app: FastifyInstance,
  errors: Map<string, Error>,
  request: FuzzRequest,
  log: FailureLog,
): Promise<LightMyRequestResponse | null> {
  const id = String(++caseNumber);
  let response: LightMyRequestResponse;
  try {
    const options: InjectOptions = {
      method: request.method as InjectOptions['method'],
      url: request.url,
      headers: { ...request.headers, 'x-fuzz-case': id },
      ...(request.body === undefined ? {} : { payload: request.body }),
    };
    response = request.route.endsWith('/stream')
      ? await injectStream(app, options)
      : await app.inject(options);
  } catch (error) {
    log.add(request, 'could not be sent', String(error), error as Error);
    return null;
  }
  const fault = faultOf(response, request.method);
  if (fault) log.add(request, fault, `${response.statusCode} ${response.body}`, errors.get(id));
  errors.delete(id);
  return response;
}

/** Both HTTP processes over one store, with tenants, tokens and definitions to aim at. */
interface FuzzTarget {
  env: TestEnv;
  fixture: FuzzFixture;
  /** The app of `cds collect`, built as its command builds it, over the same data dir. */
  collect: FastifyInstance;
  fileCollector: LandingCollectorRuntime;
  errors: { serve: Map<string, Error>; collect: Map<string, Error> };
  /** A tenant no generated request names. */
  sentinel: { tenant: string; collector: string };
  close(): Promise<void>;
}

async function openFuzzTarget(): Promise<FuzzTarget> {
  const env = await openTestEnv({
    collector: true,
    config: { cors_origins: JSON.stringify({ acme: [ORIGIN] }) },
  });
  // Before the first request readies the app, so that the hook is on every route.
  const serveErrors = capturingErrors(env.app);
  const { context } = env;
  const tokens = await seedTenants(context);
  const sentinelTenant = await createTenant(context, 'sentinel', ['main']);
  const sentinelCollector = await issueToken(context, 'sentinel', {
    kind: 'collector',
    workspaceId: null,
    name: 'backend',
  });
  const spares = [];
  for (const name of ['spare 1', 'spare 2', 'spare 3']) {
    spares.push(await issueToken(context, 'acme', { kind: 'workspace', workspaceId: 'eu', name }));
  }
  // Control-plane writes through the API publish the registry both collectors read.
  await registerEventTypes(env, sentinelTenant.token, 'sentinel');
  await registerEventTypes(env, tokens.tenant);
  for (const metric of METRICS) {
    const answer = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/metric-definitions',
      metric,
    );
    expect(answer.statusCode).toBe(201);
  }
  const segment = await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/segments/buyers', {
    workspace_id: 'eu',
    display_name: 'Buyers',
    predicate: { metric: 'orders', op: 'gte', value: 1 },
  });
  expect(segment.statusCode).toBe(201);
  const order = envelope({
    name: 'order_completed',
    identifiers: { email: 'ada@example.com' },
    properties: { order_id: 'o-1', amount: 12.5 },
  });
  const sent = await call(env.app, tokens.collector, 'POST', '/v1/server/events', order);
  expect(sent.statusCode).toBe(202);
  await env.ingest();
  const profile = await call(
    env.app,
    tokens.tenant,
    'GET',
    '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=ada@example.com',
  );
  expect(profile.statusCode).toBe(200);

  const snapshotDir = join(env.dir, 'snapshots');
  mkdirSync(snapshotDir);
  const fileCollector = await openFileCollector(context.dataDir, context.config);
  const collect = createBaseApp(false);
  // Before the routes load, so that the hook is theirs too.
  const collectErrors = capturingErrors(collect);
  await collect.register((scope) => collectorRoutes(scope, fileCollector));
  return {
    env,
    fixture: {
      tokens: { ...tokens, operator: operatorToken(context.dataDir.masterKey) },
      tenant: 'acme',
      workspaces: ['eu', 'us'],
      eventTypes: ['page_viewed', 'product_viewed', 'signed_up', 'order_completed'],
      metrics: { number: ['orders', 'spend'], string: ['last_page'] },
      segments: ['buyers'],
      profileIds: [profile.json().profile_id],
      otherTenants: ['globex'],
      spareTokenIds: spares.map((spare) => spare.token_id),
      spareTokens: spares.map((spare) => spare.token),
      allowedOrigin: ORIGIN,
      snapshotDir,
      databasePath: context.store.path,
      dataDir: env.dir,
    },
    collect,
    fileCollector,
    errors: { serve: serveErrors, collect: collectErrors },
    sentinel: { tenant: sentinelTenant.token, collector: sentinelCollector.token },
    async close() {
      await collect.close();
      await fileCollector.close();
      await env.close();
    },
  };
}

const METRICS = [
  { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' },
  {
    metric_name: 'spend',
    event_name: 'order_completed',
    value_kind: 'property_number',
    value_path: 'properties.amount',
  },
  {
    metric_name: 'last_page',
    event_name: 'page_viewed',
    value_kind: 'property_string',
    value_path: 'properties.page',
    aggregation: 'latest',
  },
];

const REPLAY = `seed ${SEED}: replay with CDS_FUZZ_SEED=${SEED} npx vitest run test/api/fuzz.test.ts`;

describe('fuzz: every route of cds serve and cds collect', () => {
  let target: FuzzTarget;

  beforeAll(async () => {
    target = await openFuzzTarget();
  });
  afterAll(() => target?.close());

  it('has fuzz inputs for every route of cds serve and cds collect, and for no other', async () => {
    const routes = new Set([
      ...(await listRoutes(target.env.app)),
      ...(await listRoutes(target.collect)),
    ]);
    expect([...routes].sort()).toEqual(Object.keys(ROUTE_INPUTS).sort());
  });

  /** Sends generated requests to every route of `app` and expects no failure among the answers. */
  async function fuzz(
    name: string,
    app: FastifyInstance,
    errors: Map<string, Error>,
    share: number,
  ) {
    const routes = await listRoutes(app);
    const requests = fc
      .noBias(fc.constantFrom(...routes))
      .chain((route) => requestsFor(target.fixture, route));
    const tried = new Set<string>();
    const log = new FailureLog();
    const minimum = Math.round(MIN_RUNS * share);
    const details = await fc.check(
      fc.asyncProperty(requests, async (request) => {
        tried.add(request.route);
        const response = await fire(app, errors, request, log);
        if (response) learn(target.fixture, request, response.statusCode, response.body);
      }),
      {
        seed: SEED,
        numRuns: Math.round(RUNS * share),
        interruptAfterTimeLimit: Math.round(TIME_BUDGET_MS * share),
        markInterruptAsFailure: false,
      },
    );
    console.log(
      `fuzz ${name}: ${details.numRuns} requests run (minimum ${minimum}; seed ${SEED})${details.interrupted ? ', stopped by the time limit' : ''}`,
    );
    if (details.failed) expect.fail(`${REPLAY}\n${fc.defaultReportMessage(details)}`);
    expect(details.numRuns, `requests run before the time limit; ${REPLAY}`).toBeGreaterThanOrEqual(
      minimum,
    );
    expect([...tried].sort(), 'routes the run reached').toEqual(routes);
    expect(log.report(), REPLAY).toEqual([]);
  }

  it(
    'cds serve answers every request below 500, and every refusal in the error body',
    () => fuzz('cds serve', target.env.app, target.errors.serve, SERVE_SHARE),
    TIME_BUDGET_MS + 30_000,
  );

  it(
    'cds collect answers every request below 500, and every refusal in the error body',
    () => fuzz('cds collect', target.collect, target.errors.collect, 1 - SERVE_SHARE),
    TIME_BUDGET_MS + 30_000,
  );

  it('ingests every event the collectors accepted during the run without failing', async () => {
    await target.fileCollector.writer.sealAll();
    await expect(target.env.ingest()).resolves.toBeUndefined();
    expect(await operatorReadiness(target.env)).toMatchObject({ backlog_files: 0, error: null });
  }, 60_000);

  it('ingests, after the run, the events of a tenant the run never named', async () => {
    const { env, collect, sentinel } = target;
    const event = (email: string) =>
      envelope({ tenant: 'sentinel', workspace: 'main', identifiers: { email } });
    const emails = { serve: 'serve@sentinel.test', collect: 'collect@sentinel.test' };
    for (const [app, email] of [
      [env.app, emails.serve],
      [collect, emails.collect],
    ] as const) {
      const answer = await call(app, sentinel.collector, 'POST', '/v1/server/events/batch', {
        events: [event(email)],
      });
      expect(answer.json()).toEqual({ accepted: 1, rejected: [] });
    }
    await target.fileCollector.writer.sealAll();
    // A failing ingest is the finding of the test above; this one asks whether the sentinel's
    // events arrive despite it.
    await env.ingest().catch(() => undefined);
    for (const email of Object.values(emails)) {
      const lookup = await call(
        env.app,
        sentinel.tenant,
        'GET',
        `/v1/tenants/sentinel/workspaces/main/profiles/lookup?email=${email}`,
      );
      expect(lookup.statusCode, email).toBe(200);
    }
  }, 60_000);
});

/** Inputs earlier runs failed on, tried on every run whatever the seed. */
const FOUND: [string, 'serve' | 'collect', (fixture: FuzzFixture) => Omit<FuzzRequest, 'route'>][] =
  [
    [
      'a browser event for tenant constructor from an allowed origin',
      'collect',
      () => ({
        method: 'POST',
        url: '/v1/events',
        headers: {
          'x-tenant-id': 'constructor',
          'x-workspace-id': 'eu',
          origin: ORIGIN,
          'content-type': 'application/json',
        },
        body: JSON.stringify(envelope({ anon: 'v1' })),
      }),
    ],
    [
      'a preflight for tenant __proto__',
      'serve',
      () => ({
        method: 'OPTIONS',
        url: '/v1/events',
        headers: {
          'x-tenant-id': '__proto__',
          origin: ORIGIN,
          'access-control-request-method': 'POST',
        },
      }),
    ],
    [
      'a preflight without access-control-request-method',
      'collect',
      () => ({ method: 'OPTIONS', url: '/v1/events', headers: { origin: ORIGIN } }),
    ],
    [
      'a server event whose properties nest 20,000 levels deep',
      'collect',
      (fixture) => ({
        method: 'POST',
        url: '/v1/server/events',
        headers: {
          authorization: `Bearer ${fixture.tokens.collector}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(envelope()).replace(
          '"properties":{}',
          `"properties":{"nested":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`,
        ),
      }),
    ],
    [
      'a tenant id over 100 characters in the path',
      'serve',
      (fixture) => ({
        method: 'GET',
        url: `/v1/tenants/${'a'.repeat(101)}/workspaces`,
        headers: { authorization: `Bearer ${fixture.tokens.tenant}` },
      }),
    ],
    [
      'a path with a broken percent escape',
      'serve',
      (fixture) => ({
        method: 'GET',
        url: '/v1/tenants/%/workspaces',
        headers: { authorization: `Bearer ${fixture.tokens.tenant}` },
      }),
    ],
    [
      'a snapshot path holding a NUL byte',
      'serve',
      (fixture) => ({
        method: 'POST',
        url: '/v1/operator/snapshots',
        headers: {
          authorization: `Bearer ${fixture.tokens.operator}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ path: `${fixture.snapshotDir}/nul\u0000.duckdb` }),
      }),
    ],
    [
      'a snapshot file name longer than the file system allows',
      'serve',
      (fixture) => ({
        method: 'POST',
        url: '/v1/operator/snapshots',
        headers: {
          authorization: `Bearer ${fixture.tokens.operator}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ path: `${fixture.snapshotDir}/${'a'.repeat(300)}.duckdb` }),
      }),
    ],
    [
      'a history cursor whose time is out of range',
      'serve',
      (fixture) => ({
        method: 'GET',
        url: `/v1/tenants/acme/workspaces/eu/profiles/${fixture.profileIds[0]}/history?cursor=${Buffer.from('{"at":"9999-99-99T99:99:99Z","kind":"merge","ref":"x"}').toString('base64url')}`,
        headers: { authorization: `Bearer ${fixture.tokens.tenant}` },
      }),
    ],
    [
      'a placeholder holding a lone surrogate',
      'serve',
      (fixture) => ({
        method: 'PUT',
        url: '/v1/tenants/acme/placeholders',
        headers: {
          authorization: `Bearer ${fixture.tokens.tenant}`,
          'content-type': 'application/json',
        },
        body: '{"values":{"email":["\\ud800"]}}',
      }),
    ],
    [
      'a snapshot replacing a folder',
      'serve',
      (fixture) => ({
        method: 'POST',
        url: '/v1/operator/snapshots',
        headers: {
          authorization: `Bearer ${fixture.tokens.operator}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({ path: fixture.snapshotDir, replace: true }),
      }),
    ],
    [
      'a preview comparing a number metric with 2^63',
      'serve',
      (fixture) => ({
        method: 'POST',
        url: '/v1/tenants/acme/segments/preview',
        headers: {
          authorization: `Bearer ${fixture.tokens.tenant}`,
          'content-type': 'application/json',
        },
        body: '{"workspace_id":"eu","predicate":{"metric":"spend","op":"gt","value":9223372036854775808}}',
      }),
    ],
  ];

describe('fuzz: inputs earlier runs failed on', () => {
  let target: FuzzTarget;

  beforeAll(async () => {
    target = await openFuzzTarget();
  });
  afterAll(() => target?.close());

  it.each(FOUND)('answers %s below 500, a refusal in the error body', async (what, app, build) => {
    const log = new FailureLog();
    const request = { route: what, ...build(target.fixture) };
    if (app === 'serve') await fire(target.env.app, target.errors.serve, request, log);
    else await fire(target.collect, target.errors.collect, request, log);
    expect(log.report()).toEqual([]);
  });
});

/** Written as Latin-1, so `\xff\xfe` are the two bytes, which no UTF-8 text holds. */
const NOT_UTF8 = `{"events":[${JSON.stringify(envelope({ anon: 'v1', id: '\xff\xfe' }))}]}`;

/** Requests only a socket can send: what Node's HTTP parser refuses before Fastify sees them. */
const RAW_REQUESTS: [string, string][] = [
  [
    'a header section over 16 KiB',
    `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
  ],
  ['a URL over 16 KiB', `GET /v1/tenants/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
  ['a header line without a colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nNo colon here\r\n\r\n'],
  [
    'a Content-Length that is no number',
    'POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n',
  ],
  [
    'a chunked body with a broken chunk size',
    'POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
  ],
  ['a request line that is not HTTP', 'HELLO\r\n\r\n'],
  [
    'a JSON body that is not UTF-8',
    `POST /v1/events/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nx-tenant-id: acme\r\nx-workspace-id: eu\r\nContent-Length: ${NOT_UTF8.length}\r\nConnection: close\r\n\r\n${NOT_UTF8}`,
  ],
];

/** Sends `text` as Latin-1 bytes and reads the answer until the server closes or goes quiet. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    const done = () => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(2000, done);
    socket.on('data', (chunk) => {
      answer += chunk.toString('utf8');
    });
    socket.on('end', done);
    socket.on('error', (error) => (answer ? done() : reject(error)));
    socket.write(Buffer.from(text, 'latin1'));
  });
}

describe.each([
  ['cds serve', 'serve'],
  ['cds collect', 'collect'],
] as const)('fuzz: %s on a socket', (_name, kind) => {
  let env: TestEnv;
  let app: FastifyInstance;
  let fileCollector: LandingCollectorRuntime | undefined;
  let port: number;

  beforeAll(async () => {
    env = await openTestEnv({ collector: true });
    await registerEventTypes(env, (await seedTenants(env.context)).tenant);
    app = env.app;
    if (kind === 'collect') {
      fileCollector = await openFileCollector(env.context.dataDir, env.context.config);
      app = createBaseApp(false);
      await app.register((scope) =>
        collectorRoutes(scope, fileCollector as LandingCollectorRuntime),
      );
    }
    await app.listen({ port: 0, host: '127.0.0.1' });
    port = (app.server.address() as { port: number }).port;
  });

  afterAll(async () => {
    if (kind === 'collect') await app.close();
    await fileCollector?.close();
    await env.close();
  });

  it.each(RAW_REQUESTS)(
    'answers %s below 500, a refusal in the error body',
    async (_what, text) => {
      const answer = await rawExchange(port, text);
      const [head = '', body = ''] = answer.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
      expect(status, answer.slice(0, 300)).toBeGreaterThanOrEqual(200);
      expect(status, answer.slice(0, 300)).toBeLessThan(500);
      if (status < 400) return;
      // A chunked answer carries its length before the JSON.
      const json = body.includes('\r\n') ? (body.split('\r\n')[1] ?? '') : body;
      expect(errorBody.safeParse(JSON.parse(json)).success, answer.slice(0, 300)).toBe(true);
    },
  );
});
