import { once } from 'node:events';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_ERROR_LINGER_MS, MAX_URL_BYTES } from '../../src/api/http-edges.js';
import { type ChildServer, runCli, startCli } from '../helpers/cli.js';
import { type TestEnv, tempDir } from '../helpers/context.js';
import { openSeededEnv } from '../helpers/seeded.js';
import type { Tokens } from '../helpers/tenant.js';

interface RawAnswer {
  status: number;
  headers: string;
  body: string;
  /** The server closed the connection after answering. */
  closed: boolean;
}

/** Sends `bytes` as they are on a fresh connection and reads the one answer. */
async function sendRaw(url: string, bytes: string, endAfterWrite = false): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let received = '';
  let closed = false;
  socket.on('data', (chunk) => {
    received += chunk.toString('utf8');
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    closed = true;
  });
  if (endAfterWrite) socket.end(bytes);
  else socket.write(bytes);
  const complete = () => {
    const split = received.indexOf('\r\n\r\n');
    if (split < 0) return false;
    const length = /content-length: (\d+)/i.exec(received.slice(0, split))?.[1];
    return length !== undefined && Buffer.byteLength(received.slice(split + 4)) >= Number(length);
  };
  const deadline = Date.now() + 5000;
  while (!complete() && !closed && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // A refused connection is closed by the server once the client has read the answer.
  const closeBy = Date.now() + CLIENT_ERROR_LINGER_MS + 1000;
  while (!closed && Date.now() < closeBy && /connection: close/i.test(received)) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  socket.destroy();
  const split = received.indexOf('\r\n\r\n');
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(received)?.[1] ?? 0),
    headers: received.slice(0, split),
    body: received.slice(split + 4),
    closed,
  };
}

function expectErrorBody(answer: RawAnswer, status: number, code: string): void {
  expect(answer.status).toBe(status);
  expect(answer.headers).toMatch(/content-type: application\/json/i);
  const body = JSON.parse(answer.body);
  expect(body).toEqual({ error: { code, message: expect.any(String) } });
  expect(body.error.message.length).toBeGreaterThan(0);
}

const CRLF = '\r\n';
const request = (line: string, ...headers: string[]) =>
  [line, 'Host: cds.test', ...headers, '', ''].join(CRLF);

/** What Node's parser refuses before any route runs, and what each is answered. */
const PARSER_REFUSALS: [string, string, number, string][] = [
  ['a request line that is not HTTP', `GARBAGE${CRLF}${CRLF}`, 400, 'bad_request'],
  ['an invalid method token', request('G(ET /healthz HTTP/1.1'), 400, 'bad_request'],
  ['an HTTP version other than 1.x', request('GET /healthz HTTP/7.0'), 400, 'bad_request'],
  ['a space in the URL', request('GET /heal thz HTTP/1.1'), 400, 'bad_request'],
  [
    'a control character in a header value',
    request('GET / HTTP/1.1', 'X-A: a\x01b'),
    400,
    'bad_request',
  ],
  ['a space in a header name', request('GET / HTTP/1.1', 'X A: b'), 400, 'bad_request'],
  [
    'a content-length that is not a number',
    request('POST /v1/events HTTP/1.1', 'Content-Length: 1x'),
    400,
    'bad_request',
  ],
  [
    'two content-lengths',
    request('POST /v1/events HTTP/1.1', 'Content-Length: 1', 'Content-Length: 2'),
    400,
    'bad_request',
  ],
  [
    'content-length and chunked together',
    request('POST /v1/events HTTP/1.1', 'Content-Length: 1', 'Transfer-Encoding: chunked'),
    400,
    'bad_request',
  ],
  [
    'a chunk size that is not hex',
    `${request('POST /v1/events HTTP/1.1', 'Content-Type: application/json', 'Transfer-Encoding: chunked')}zz${CRLF}`,
    400,
    'bad_request',
  ],
  ['bare LF line ends', 'GET /healthz HTTP/1.1\nHost: x\n\n', 400, 'bad_request'],
  ['the HTTP/2 preface', `PRI * HTTP/2.0${CRLF}${CRLF}SM${CRLF}${CRLF}`, 400, 'bad_request'],
  [
    'a URL over the header limit',
    request(`GET /${'a'.repeat(20_000)} HTTP/1.1`),
    414,
    'uri_too_long',
  ],
  [
    'headers over 16 KiB',
    request('GET /healthz HTTP/1.1', `X-A: ${'a'.repeat(20_000)}`),
    431,
    'headers_too_large',
  ],
  [
    '3,000 small headers',
    request('GET /healthz HTTP/1.1', ...Array.from({ length: 3000 }, (_, i) => `X-${i}: 1`)),
    431,
    'headers_too_large',
  ],
  ['CONNECT', request('CONNECT cds.test:443 HTTP/1.1'), 404, 'not_found'],
];

/** What Node or Fastify answered by itself, and what reaches our handlers now. */
const EARLY_ANSWERS: [string, string, number, string][] = [
  [
    'a URL over 8 KiB',
    request(`GET /v1/${'a'.repeat(MAX_URL_BYTES)} HTTP/1.1`),
    414,
    'uri_too_long',
  ],
  [
    'a path that is not valid percent-encoding',
    request('GET /v1/tenants/%E0%A4%A/workspaces HTTP/1.1'),
    400,
    'bad_request',
  ],
  [
    'a path parameter over 8 KiB',
    request(`GET /v1/tenants/${'a'.repeat(MAX_URL_BYTES + 1)}/workspaces HTTP/1.1`),
    414,
    'uri_too_long',
  ],
  ['an HTTP/1.1 request without Host', `GET /healthz HTTP/1.1${CRLF}${CRLF}`, 400, 'bad_request'],
  [
    'an Expect other than 100-continue',
    request('POST /v1/events HTTP/1.1', 'Expect: teapot', 'Content-Length: 2'),
    417,
    'expectation_failed',
  ],
  ['an unknown route', request('GET /nothing HTTP/1.1'), 404, 'not_found'],
  ['an unknown method on a known path', request('PROPFIND /healthz HTTP/1.1'), 404, 'not_found'],
];

const LISTENING = /cds listening on (http:\/\/\S+)/;
const COLLECTING = /collector listening on (http:\/\/\S+)/;

describe.each([
  ['cds serve', ['serve', '--quiet'], LISTENING],
  ['cds collect', ['collect'], COLLECTING],
])('the HTTP layer of %s', (_name, command, ready) => {
  let server: ChildServer;
  beforeAll(async () => {
    const dir = tempDir();
    // Writes registry.json, which cds collect needs.
    expect((await runCli(['--data-dir', dir, 'tenants', 'create', 'acme', '-w', 'eu'])).code).toBe(
      0,
    );
    server = await startCli(['--data-dir', dir, ...command, '--port', '0'], ready);
  }, 30_000);
  afterAll(async () => {
    expect(await server.stop()).toBe(0);
  });

  it.each(PARSER_REFUSALS)(
    'answers %s in the error body and closes the connection',
    async (_what, bytes, status, code) => {
      const answer = await sendRaw(server.url, bytes);
      expectErrorBody(answer, status, code);
      expect(answer.headers).toMatch(/connection: close/i);
      expect(answer.closed).toBe(true);
    },
  );

  it.each(EARLY_ANSWERS)('answers %s in the error body', async (_what, bytes, status, code) => {
    expectErrorBody(await sendRaw(server.url, bytes), status, code);
  });

  it('answers a body cut short by the client in the error body', async () => {
    const answer = await sendRaw(
      server.url,
      // A known tenant and workspace: the collector refuses others before it reads a body.
      `${request('POST /v1/events HTTP/1.1', 'Content-Type: application/json', 'X-Tenant-Id: acme', 'X-Workspace-Id: eu', 'Content-Length: 10')}{}`,
      true,
    );
    expectErrorBody(answer, 400, 'bad_request');
  });

  it('still answers a well-formed request after all of these', async () => {
    expect(await (await fetch(`${server.url}/healthz`)).json()).toEqual({ status: 'ok' });
  });
});

describe('the HTTP layer in process', () => {
  let env: TestEnv;
  let tokens: Tokens;
  beforeAll(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true, eventTypes: false }));
  });
  afterAll(() => env.close());

  it('answers a request that times out 408 in the error body', async () => {
    await env.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = env.app.server.address() as AddressInfo;
    const accepted = once(env.app.server, 'connection') as Promise<[Socket]>;
    const client = connect(port, '127.0.0.1');
    let received = '';
    client.on('data', (chunk) => {
      received += chunk.toString();
    });
    const [serverSide] = await accepted;
    // What Node emits when headersTimeout or requestTimeout runs out (checked every 30 s).
    const timeout = Object.assign(new Error('Request timeout'), {
      code: 'ERR_HTTP_REQUEST_TIMEOUT',
    });
    env.app.server.emit('clientError', timeout, serverSide);
    await once(client, 'close');
    const body = received.slice(received.indexOf('\r\n\r\n') + 4);
    expect(received).toMatch(/^HTTP\/1\.1 408 Request Timeout\r\n/);
    expect(JSON.parse(body)).toEqual({
      error: { code: 'request_timeout', message: expect.any(String) },
    });
  });

  it.each([
    [
      'a URL over 8 KiB',
      `/v1/tenants/acme/workspaces?x=${'a'.repeat(MAX_URL_BYTES)}`,
      414,
      'uri_too_long',
    ],
    [
      'a path that is not valid percent-encoding',
      '/v1/tenants/%E0%A4%A/workspaces',
      400,
      'bad_request',
    ],
    [
      'an id over 100 characters, at its route (Fastify answered 414)',
      `/v1/tenants/acme/segments/${'a'.repeat(101)}`,
      404,
      'not_found',
    ],
  ])('answers %s in the error body', async (_what, url, status, code) => {
    const response = await env.app.inject({
      method: 'GET',
      url,
      headers: { authorization: `Bearer ${tokens.tenant}` },
    });
    expect(response.statusCode).toBe(status);
    expect(response.json()).toMatchObject({ error: { code } });
  });
});
