import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { buildApp } from '../../src/api/app.js';
import { forwardedClientValue } from '../../src/api/client-address.js';
import { startingThroughFailOver } from '../../src/bus/start-retry.js';
import type { ConfigInput } from '../../src/config.js';
import { type ClusterView, openClusterView } from '../../src/shards/cluster-view.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import { createTenant, listTenants } from '../../src/tenancy/tenants.js';
import { generateToken } from '../../src/tenancy/token-format.js';
import { startCli } from '../helpers/cli.js';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { openTestEnv, type TestEnv, tempDir } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { logRecords } from '../helpers/log.js';
import { startTestCluster, type TestCluster } from '../helpers/nats-cluster.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';

/** One owner: its own data dir and database, listening, announced under its shard. */
interface TestOwner {
  shard: string;
  env: TestEnv;
  view: ClusterView;
  app: FastifyInstance;
  url: string;
}

let cluster: TestCluster;
let a: TestOwner;
let b: TestOwner;
let acme: Tokens;
let initechToken: string;
let operator: string;
const masterKey = randomBytes(32).toString('hex');

async function startOwner(
  shard: string,
  defaultShard?: string,
  config: ConfigInput = {},
): Promise<TestOwner> {
  // With a collector, so a test can put events into this owner's database.
  const env = await openTestEnv({ collector: true, config: { master_key: masterKey, ...config } });
  // As `cds serve` opens it: a watch asked for while the cluster is busy (other files' clusters
  // share the cores) may time out once, and is asked for again.
  const bus = await cluster.connect('owner');
  const view = await startingThroughFailOver('the cluster view', () =>
    openClusterView(bus, { shard, defaultShard }),
  );
  const app = buildApp(env.context, { cluster: view, apiDocument: false });
  const url = await app.listen({ port: 0, host: '127.0.0.1' });
  await view.owners.announce(shard, {
    url,
    pid: process.pid,
    started_at: new Date().toISOString(),
  });
  return { shard, env, view, app, url };
}

interface Answer {
  status: number;
  body: unknown;
  headers: Headers;
}

async function send(
  owner: TestOwner,
  token: string | null,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const response = await fetch(owner.url + path, {
    method,
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      ...(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...options.headers,
    },
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? JSON.parse(text) : null,
    headers: response.headers,
  };
}

/** The same request through both owners answers the same. */
async function sameThroughBoth(token: string | null, method: string, path: string, body?: unknown) {
  const direct = await send(a, token, method, path, { body });
  const forwarded = await send(b, token, method, path, { body });
  expect({ status: forwarded.status, body: forwarded.body }).toEqual({
    status: direct.status,
    body: direct.body,
  });
  return direct;
}

beforeAll(async () => {
  cluster = await startTestCluster();
  // Refused tokens are counted per client address on a (the clock of the tests stands still).
  a = await startOwner('a', undefined, { refused_rate_limit: 20 });
  b = await startOwner('b');
  operator = operatorToken(a.env.context.dataDir.masterKey);
  acme = await seedTenants(a.env.context);
  initechToken = (await createTenant(b.env.context, 'initech', ['main'])).token;
  await a.view.map.assign('acme', 'a');
  await a.view.map.assign('globex', 'a');
  await b.view.map.assign('initech', 'b');
  await vi.waitFor(() => expect(b.view.placement('globex')?.shard).toBe('a'));
  await vi.waitFor(() => expect(a.view.placement('initech')?.shard).toBe('b'));
  await vi.waitFor(() => expect(a.view.owners.of('b')?.url).toBe(b.url));
  await vi.waitFor(() => expect(b.view.owners.of('a')?.url).toBe(a.url));
}, 90_000);

afterAll(async () => {
  for (const owner of [a, b]) {
    if (!owner) continue;
    await owner.app.close();
    owner.view.stop();
    await owner.env.close();
  }
  await cluster?.close();
});

describe('one API on any owner (cluster mode)', () => {
  it('answers control-plane reads through either owner alike', async () => {
    for (const path of [
      '/v1/tenants/acme/workspaces',
      '/v1/tenants/acme/event-types',
      '/v1/tenants/acme/tokens',
      '/v1/tenants/acme/segments',
      '/v1/tenants/acme/identifier-types',
    ]) {
      const answer = await sameThroughBoth(acme.tenant, 'GET', path);
      expect(answer.status, path).toBe(200);
    }
    const workspaces = await send(b, acme.tenant, 'GET', '/v1/tenants/acme/workspaces');
    expect(workspaces.body).toMatchObject({
      workspaces: [{ workspace_id: 'eu' }, { workspace_id: 'us' }],
    });
    // The query goes along: without it the lookup would be a 422.
    const lookup = await sameThroughBoth(
      acme.workspace,
      'GET',
      '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=nobody%40example.com',
    );
    expect(lookup.status).toBe(404);
    // And the other way round: initech lives on b.
    const initech = await send(a, initechToken, 'GET', '/v1/tenants/initech/workspaces');
    expect(initech.status).toBe(200);
    expect(initech.body).toMatchObject({ workspaces: [{ workspace_id: 'main' }] });
  });

  it('finds a token through any owner: whoami asks the others for a token it does not know', async () => {
    for (const token of [acme.tenant, acme.workspace]) {
      const direct = await send(a, token, 'GET', '/v1/whoami');
      const elsewhere = await send(b, token, 'GET', '/v1/whoami');
      expect(direct.status).toBe(200);
      expect(elsewhere).toMatchObject({ status: 200, body: direct.body });
    }
    expect((await send(b, acme.workspace, 'GET', '/v1/whoami')).body).toMatchObject({
      kind: 'workspace',
      tenant_id: 'acme',
      workspace_id: 'eu',
    });
    expect((await send(a, initechToken, 'GET', '/v1/whoami')).body).toMatchObject({
      tenant_id: 'initech',
    });
    const unknown = await send(b, generateToken('tenant'), 'GET', '/v1/whoami');
    expect(unknown.status).toBe(401);
    expect((await send(b, acme.revoked, 'GET', '/v1/whoami')).status).toBe(401);
  });

  it('merges the operator list of tenants across owners, paging with one cursor', async () => {
    const all = await sameThroughBoth(operator, 'GET', '/v1/operator/tenants');
    expect(
      (all.body as { tenants: { tenant_id: string }[] }).tenants.map((t) => t.tenant_id),
    ).toEqual(expect.arrayContaining(['acme', 'globex', 'initech']));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: Answer = await send(
        b,
        operator,
        'GET',
        `/v1/operator/tenants?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.status).toBe(200);
      const body = page.body as { tenants: { tenant_id: string }[]; next_cursor: string | null };
      expect(body.tenants.length).toBeLessThanOrEqual(1);
      seen.push(...body.tenants.map((t) => t.tenant_id));
      cursor = body.next_cursor;
    } while (cursor !== null);
    expect(seen).toEqual(
      (all.body as { tenants: { tenant_id: string }[] }).tenants.map((t) => t.tenant_id),
    );
  });

  it('lands writes made through the other owner on the owner of the tenant', async () => {
    const put = await send(b, acme.tenant, 'PUT', '/v1/tenants/acme/event-types/order_placed', {
      body: {},
    });
    expect(put.status).toBe(201);
    const direct = await send(a, acme.tenant, 'GET', '/v1/tenants/acme/event-types');
    expect(JSON.stringify(direct.body)).toContain('order_placed');
    const localOfB = await listTenants(b.env.context, { limit: 100, cursor: null });
    expect(localOfB.items.map((t) => t.tenant_id)).toEqual(['initech']);
    const minted = await send(b, acme.tenant, 'POST', '/v1/tenants/acme/tokens', {
      body: { kind: 'workspace', workspace_id: 'eu', name: 'through b' },
    });
    expect(minted.status).toBe(201);
    const tokenId = (minted.body as { token_id: string }).token_id;
    const revoked = await send(b, acme.tenant, 'DELETE', `/v1/tenants/acme/tokens/${tokenId}`);
    expect(revoked.status).toBe(204);
    const tokens = await send(a, acme.tenant, 'GET', '/v1/tenants/acme/tokens');
    expect(JSON.stringify(tokens.body)).toContain(tokenId);
    // An operator route of the tenant goes to its owner too.
    const issued = await send(b, operator, 'POST', '/v1/operator/tenants/acme/tenant-tokens', {
      body: { name: 'through b' },
    });
    expect(issued.status).toBe(201);
    const fresh = (issued.body as { token: string }).token;
    expect((await send(a, fresh, 'GET', '/v1/whoami')).body).toMatchObject({ tenant_id: 'acme' });
  });

  it('gives the owner’s error answers back unchanged', async () => {
    const unauthorized = await sameThroughBoth(
      'cpt_not-a-token',
      'GET',
      '/v1/tenants/acme/workspaces',
    );
    expect(unauthorized.status).toBe(401);
    const forbidden = await sameThroughBoth(
      acme.workspace,
      'PUT',
      '/v1/tenants/acme/event-types/x',
      {},
    );
    expect(forbidden.status).toBe(403);
    const missing = await sameThroughBoth(acme.tenant, 'GET', '/v1/tenants/acme/workspaces/nope');
    expect(missing.status).toBe(404);
    const invalid = await sameThroughBoth(acme.tenant, 'PUT', '/v1/tenants/acme/event-types/y', {
      dedup_entity: 'order',
    });
    expect(invalid.status).toBe(422);
    const otherTenant = await sameThroughBoth(acme.tenant, 'GET', '/v1/tenants/globex/workspaces');
    expect(otherTenant.status).toBe(403);
    // A body the owner cannot parse is its 400, not this process's.
    const direct = await fetch(`${a.url}/v1/tenants/acme/event-types/z`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${acme.tenant}`, 'content-type': 'application/json' },
      body: '{"dedup_entity":',
    });
    const forwarded = await fetch(`${b.url}/v1/tenants/acme/event-types/z`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${acme.tenant}`, 'content-type': 'application/json' },
      body: '{"dedup_entity":',
    });
    expect(forwarded.status).toBe(400);
    expect(await forwarded.json()).toEqual(await direct.json());
  });

  it('answers 503 owner_unavailable for an owner that does not answer or never announced itself', async () => {
    await a.view.owners.announce('gone', {
      url: 'http://127.0.0.1:9',
      pid: 1,
      started_at: new Date().toISOString(),
    });
    await a.view.map.assign('hooli', 'gone');
    await a.view.map.assign('umbrella', 'nobody');
    await expect.poll(() => b.view.placement('umbrella')?.shard).toBe('nobody');
    await expect.poll(() => b.view.owners.of('gone')?.url).toBe('http://127.0.0.1:9');
    const down = await send(b, acme.tenant, 'GET', '/v1/tenants/hooli/workspaces');
    expect(down.status).toBe(503);
    expect(down.body).toMatchObject({ error: { code: 'owner_unavailable' } });
    const none = await send(b, acme.tenant, 'GET', '/v1/tenants/umbrella/workspaces');
    expect(none.status).toBe(503);
    expect(JSON.stringify(none.body)).toContain('no owner has announced itself');
    // A list of every tenant without those of shard `gone` would read as the whole list.
    const list = await send(b, operator, 'GET', '/v1/operator/tenants');
    expect(list.status).toBe(503);
    expect(list.body).toMatchObject({ error: { code: 'owner_unavailable' } });
    const metrics = await (
      await fetch(`${b.url}/metrics`, { headers: { authorization: `Bearer ${operator}` } })
    ).text();
    expect(metrics).toMatch(
      /cds_forwarded_requests_total\{shard="gone",outcome="unreachable"\} [1-9]/,
    );
    expect(metrics).toMatch(/cds_forwarded_requests_total\{shard="a",outcome="answered"\} [1-9]/);
  });

  it('forwards method, path, query, headers and body as they came, and the answer as it is', async () => {
    const seen: {
      method?: string;
      url?: string;
      headers: Record<string, unknown>;
      body: string;
    }[] = [];
    const echo = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on('end', () => {
        seen.push({ method: request.method, url: request.url, headers: request.headers, body });
        response.writeHead(207, { 'content-type': 'text/plain', 'x-echo': 'yes' });
        response.end('echoed');
      });
    });
    echo.listen(0, '127.0.0.1');
    await once(echo, 'listening');
    try {
      const url = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;
      await a.view.owners.announce('echo', { url, pid: 1, started_at: new Date().toISOString() });
      await a.view.map.assign('echoed', 'echo');
      await vi.waitFor(() => expect(b.view.placement('echoed')?.shard).toBe('echo'));
      await vi.waitFor(() => expect(b.view.owners.of('echo')?.url).toBe(url));
      const response = await fetch(`${b.url}/v1/tenants/echoed/event-types/x?a=1&b=%2F`, {
        method: 'PUT',
        headers: { authorization: 'Bearer anything', 'content-type': 'application/json' },
        body: '{"raw":   true}',
      });
      expect(response.status).toBe(207);
      expect(response.headers.get('x-echo')).toBe('yes');
      expect(await response.text()).toBe('echoed');
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({
        method: 'PUT',
        url: '/v1/tenants/echoed/event-types/x?a=1&b=%2F',
        body: '{"raw":   true}',
        headers: {
          authorization: 'Bearer anything',
          'content-type': 'application/json',
          'x-cds-forwarded-from': 'b',
        },
      });
      expect(String(seen[0]?.headers['x-cds-forwarded-client'])).toMatch(/^127\.0\.0\.1 \S+$/);
    } finally {
      echo.close();
    }
  });

  it('counts refused tokens per client address, as the forwarding owner vouches for it', async () => {
    const vouched = forwardedClientValue(a.env.context.dataDir.masterKey, '192.0.2.7');
    const refused = (headers: Record<string, string>) =>
      send(a, generateToken('tenant'), 'GET', '/v1/tenants/acme/workspaces', { headers });
    const statuses: number[] = [];
    while (statuses.at(-1) !== 429 && statuses.length < 50)
      statuses.push((await refused({ 'x-cds-forwarded-client': vouched })).status);
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((status) => status === 401)).toBe(true);
    // Another address is not held back by 192.0.2.7's bad tokens, nor by a vouch not signed.
    expect((await refused({})).status).toBe(401);
    expect((await refused({ 'x-cds-forwarded-client': '192.0.2.7 forged' })).status).toBe(401);
  });

  it('streams live events through the other owner as the tenant’s owner ingests them', async () => {
    // Through the app of a's collector, which re-reads its registry after the write.
    const registered = await call(
      a.env.app,
      acme.tenant,
      'PUT',
      '/v1/tenants/acme/event-types/stream_checked',
      {},
    );
    expect(registered.statusCode).toBeLessThan(300);
    const controller = new AbortController();
    try {
      const response = await fetch(`${b.url}/v1/tenants/acme/workspaces/eu/events/stream`, {
        headers: { authorization: `Bearer ${acme.workspace}`, accept: 'text/event-stream' },
        // A stream that never says the event fails the read instead of hanging the test.
        signal: AbortSignal.any([controller.signal, AbortSignal.timeout(15_000)]),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const event = envelope({
        name: 'stream_checked',
        identifiers: { email: 'streamed.person@example.com' },
      });
      expect((await sendServer(a.env, acme.collector, [event])).statusCode).toBe(202);
      await a.env.ingest();
      const decoder = new TextDecoder();
      let text = '';
      while (!text.includes(String(event.id))) {
        const chunk = await reader.read();
        if (chunk.done) break;
        text += decoder.decode(chunk.value, { stream: true });
      }
      expect(text).toContain(`"event_id":"${String(event.id)}"`);
      expect(text).toContain('event: line');
      expect(text).not.toContain('streamed.person@example.com');
    } finally {
      controller.abort();
    }
  });

  it('ends a stream through the other owner within a second of its token being revoked there', async ({
    annotate,
  }) => {
    const minted = await send(b, acme.tenant, 'POST', '/v1/tenants/acme/tokens', {
      body: { kind: 'workspace', workspace_id: 'eu', name: 'forwarded streamer' },
    });
    expect(minted.status).toBe(201);
    const { token, token_id } = minted.body as { token: string; token_id: string };
    const response = await fetch(`${b.url}/v1/tenants/acme/workspaces/eu/events/stream`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      signal: AbortSignal.timeout(15_000),
    });
    expect(response.status).toBe(200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let text = '';
    while (!text.includes(': connected')) {
      const chunk = await reader.read();
      if (chunk.done) throw new Error('the stream ended before it opened');
      text += decoder.decode(chunk.value, { stream: true });
    }

    const sent = performance.now();
    expect(
      (await send(b, acme.tenant, 'DELETE', `/v1/tenants/acme/tokens/${token_id}`)).status,
    ).toBe(204);
    // Within the issue's second, with room for a loaded machine.
    const ended = AbortSignal.timeout(1_500);
    for (;;) {
      const chunk = await Promise.race([
        reader.read(),
        new Promise<never>((_, reject) =>
          ended.addEventListener('abort', () => reject(new Error('the stream did not end'))),
        ),
      ]);
      if (chunk.done) break;
      text += decoder.decode(chunk.value, { stream: true });
    }
    await annotate(`ended ${(performance.now() - sent).toFixed(0)} ms after the DELETE was sent`);
    expect(text).toContain(
      'event: error\ndata: {"error":{"code":"unauthorized","message":"unknown or revoked token"}}',
    );
    expect(text).not.toContain('event: line');
  });

  it('forwards a forwarded request no further: the loop guard answers 503', async () => {
    const looped = await send(a, acme.tenant, 'GET', '/v1/tenants/initech/workspaces', {
      headers: { 'x-cds-forwarded-from': 'b' },
    });
    expect(looped.status).toBe(503);
    expect(looped.body).toMatchObject({ error: { code: 'owner_unavailable' } });
    // The tenant on this owner itself is answered, whoever says it was forwarded.
    const local = await send(a, acme.tenant, 'GET', '/v1/tenants/acme/workspaces', {
      headers: { 'x-cds-forwarded-from': 'b' },
    });
    expect(local.status).toBe(200);
  });

  it('takes a tenant id with . * or an escaped / as data', async () => {
    await a.view.map.assign('acme.web', 'a');
    await a.view.map.assign('*', 'a');
    await a.view.map.assign('x/y', 'gone');
    await expect.poll(() => b.view.placement('x/y')?.shard).toBe('gone');
    await expect.poll(() => b.view.placement('*')?.shard).toBe('a');
    for (const path of ['/v1/tenants/acme.web/workspaces', '/v1/tenants/*/workspaces']) {
      const answer = await sameThroughBoth(acme.tenant, 'GET', path);
      expect(answer.status, path).toBe(403);
    }
    // `x%2Fy` is one tenant, `x/y`, of shard `gone`: not a path of tenant x.
    const escaped = await send(b, acme.tenant, 'GET', '/v1/tenants/x%2Fy/workspaces');
    expect(escaped.status).toBe(503);
    expect(escaped.body).toMatchObject({ error: { details: { shard: 'gone' } } });
  });

  it('keeps reading a moving tenant from the shard it leaves and holds its writes with 503', async () => {
    const entry = await a.view.map.get('globex');
    if (!entry) throw new Error('globex is not assigned');
    const moving = await a.view.map.change(entry, { shard: 'a', state: 'moving', to: 'b' });
    await expect.poll(() => b.view.placement('globex')?.state).toBe('moving');
    await expect.poll(() => a.view.placement('globex')?.state).toBe('moving');
    const read = await send(b, operator, 'GET', '/v1/tenants/globex/workspaces');
    expect(read.status).toBe(200);
    for (const owner of [a, b]) {
      const write = await send(owner, operator, 'PUT', '/v1/tenants/globex/event-types/x', {
        body: {},
      });
      expect(write.status).toBe(503);
      expect(write.headers.get('retry-after')).toBe('5');
      expect(write.body).toMatchObject({
        error: { code: 'tenant_moving', details: { from: 'a', to: 'b' } },
      });
    }
    await a.view.map.change(moving, { shard: 'a', state: 'active' });
    // b forwards the write and a answers it: both must have seen the entry active again.
    await expect.poll(() => b.view.placement('globex')?.state).toBe('active');
    await expect.poll(() => a.view.placement('globex')?.state).toBe('active');
    const after = await send(b, operator, 'PUT', '/v1/tenants/globex/event-types/x', { body: {} });
    expect(after.status).toBe(201);
  });
});

describe('tenant placement (cluster mode)', () => {
  it('creates a tenant the map assigns to another shard on that shard', async () => {
    await a.view.map.assign('soylent', 'a');
    const created = await send(b, operator, 'POST', '/v1/operator/tenants', {
      body: { tenant_id: 'soylent', workspaces: ['main'] },
    });
    expect(created.status).toBe(201);
    const onA = await listTenants(a.env.context, { limit: 100, cursor: null });
    expect(onA.items.map((t) => t.tenant_id)).toContain('soylent');
    const onB = await listTenants(b.env.context, { limit: 100, cursor: null });
    expect(onB.items.map((t) => t.tenant_id)).not.toContain('soylent');
    // Its token works through either owner at once.
    const token = (created.body as { tenant_token: { token: string } }).tenant_token.token;
    expect((await send(b, token, 'GET', '/v1/tenants/soylent/workspaces')).status).toBe(200);
    expect((await send(a, token, 'GET', '/v1/whoami')).status).toBe(200);
  });

  it('assigns an unassigned tenant to the default shard before creating it there', async () => {
    const created = await send(a, operator, 'POST', '/v1/operator/tenants', {
      body: { tenant_id: 'tyrell' },
    });
    expect(created.status).toBe(201);
    expect((await a.view.map.get('tyrell'))?.assignment).toMatchObject({
      shard: 'a',
      state: 'active',
    });
    const again = await send(b, operator, 'POST', '/v1/operator/tenants', {
      body: { tenant_id: 'tyrell' },
    });
    const direct = await send(a, operator, 'POST', '/v1/operator/tenants', {
      body: { tenant_id: 'tyrell' },
    });
    expect(again).toMatchObject({ status: direct.status, body: direct.body });
    expect(direct.status).toBe(409);
  });

  it('creates a tenant two owners are asked for at once on one shard only', async () => {
    const body = { body: { tenant_id: 'racer' } };
    const answers = await Promise.all([
      send(a, operator, 'POST', '/v1/operator/tenants', body),
      send(b, operator, 'POST', '/v1/operator/tenants', body),
    ]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([201, 409]);
    const shard = (await a.view.map.get('racer'))?.assignment.shard;
    const holders = [];
    for (const owner of [a, b]) {
      const local = await listTenants(owner.env.context, { limit: 500, cursor: null });
      if (local.items.some((t) => t.tenant_id === 'racer')) holders.push(owner.shard);
    }
    expect(holders).toEqual([shard]);
  });

  it('places a tenant made by cds tenants create --server through any owner', async () => {
    await a.view.map.assign('pied', 'a');
    const created = await cdsInProcess([
      '--server',
      b.url,
      '--token',
      operator,
      'tenants',
      'create',
      'pied',
      '--workspace',
      'piper',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('Created tenant pied; workspaces: piper');
    const onA = await listTenants(a.env.context, { limit: 100, cursor: null });
    expect(onA.items.map((t) => t.tenant_id)).toContain('pied');
  });

  it('uses the configured default shard of the owner asked', async () => {
    const c = await startOwner('c', 'b');
    try {
      await expect.poll(() => c.view.owners.of('b')?.url).toBe(b.url);
      const created = await send(c, operator, 'POST', '/v1/operator/tenants', {
        body: { tenant_id: 'wonka' },
      });
      expect(created.status).toBe(201);
      expect((await c.view.map.get('wonka'))?.assignment.shard).toBe('b');
      const onB = await listTenants(b.env.context, { limit: 100, cursor: null });
      expect(onB.items.map((t) => t.tenant_id)).toContain('wonka');
    } finally {
      await c.app.close();
      c.view.stop();
      await c.env.close();
    }
  });
});

describe('cds serve in cluster mode', () => {
  it('routes by the shard map as the owners in this process do', async () => {
    const child = await startCli(['serve'], /cds listening on (\S+) /, 30_000, {
      CDS_DATA_DIR: tempDir(),
      CDS_PORT: '0',
      CDS_BUS: cluster.servers.join(','),
      CDS_BUS_CREDS: cluster.creds.owner,
      CDS_BUS_CA: cluster.tls.caFile,
      CDS_SHARD: 's',
      CDS_MASTER_KEY: masterKey,
    });
    try {
      // Announcing is the owner's part of `cds serve`; done here for the process.
      await a.view.owners.announce('s', {
        url: child.url,
        pid: child.child.pid ?? 0,
        started_at: new Date().toISOString(),
      });
      await a.view.map.assign('cyberdyne', 's');
      await vi.waitFor(() => expect(b.view.owners.of('s')?.url).toBe(child.url));
      const created = await send(a, operator, 'POST', '/v1/operator/tenants', {
        body: { tenant_id: 'cyberdyne', workspaces: ['lab'] },
      });
      expect(created.status).toBe(201);
      const token = (created.body as { tenant_token: { token: string } }).tenant_token.token;
      const throughB = await send(b, token, 'GET', '/v1/tenants/cyberdyne/workspaces');
      expect(throughB).toMatchObject({
        status: 200,
        body: { workspaces: [{ workspace_id: 'lab' }] },
      });
      const server = { shard: 's', url: child.url } as TestOwner;
      const acmeThroughServe = await send(
        server,
        acme.tenant,
        'GET',
        '/v1/tenants/acme/workspaces',
      );
      expect(acmeThroughServe.status).toBe(200);
      expect((await send(server, acme.workspace, 'GET', '/v1/whoami')).body).toMatchObject({
        tenant_id: 'acme',
        workspace_id: 'eu',
      });
      // Each node logs a forwarded request once, as any request, naming the shard it went to or
      // came from.
      const lines = logRecords(child.errors());
      const sent = lines.filter((line) => line.msg === 'request completed' && line.res);
      expect(sent.map((line) => line.res)).toContainEqual({ statusCode: 200, forwarded_to: 'a' });
      const received = lines.filter((line) => line.msg === 'incoming request');
      expect(received.map((line) => line.req)).toContainEqual(
        expect.objectContaining({ url: '/v1/tenants/cyberdyne/workspaces', forwarded_from: 'b' }),
      );
    } finally {
      expect(await child.stop()).toBe(0);
    }
  });
});
