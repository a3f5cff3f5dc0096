import { randomBytes } from 'node:crypto';
import { type ClientRequest, request as httpRequest, type IncomingMessage } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UNREAD_BODY_DRAIN_BYTES } from '../../src/api/unread-body.js';
import { TRACKING_CALLS } from '../../src/collector/tracking-api/spec.js';
import { BODY_LIMIT_BYTES } from '../../src/http/body-limit.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import type { Tokens } from '../helpers/tenant.js';
import { basicAuth, mintWriteKey } from '../helpers/tracking-api.js';

const OVERSIZED_BYTES = 2 * 1024 * 1024;
const SENDS = 50;
/** Requests in flight at once, each on its own connection: a load, not a flood, on 2 cores. */
const IN_FLIGHT = 25;

interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: string;
  /** The server sent `100 Continue`. */
  continued: boolean;
}

type Framing = 'content-length' | 'chunked';

interface Send {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
  framing: Framing;
  /** Sends `Expect: 100-continue` and the body only once the server asks for it. */
  expectContinue?: boolean;
}

/**
 * Writes the body in pieces with a pause between them, as a client on a network slower than
 * loopback does: the server answers while the client is still sending, which is when an early
 * close resets it. Written at once, 2 MiB fit in loopback's socket buffers before any answer.
 */
async function writeSlowly(request: ClientRequest, body: Buffer): Promise<void> {
  const piece = 128 * 1024;
  for (let at = 0; at < body.length && !request.destroyed; at += piece) {
    request.write(body.subarray(at, at + piece));
    await delay(1);
  }
  request.end();
}

/**
 * One request over a connection of its own, closed after the answer (`connection: close`), as a
 * one-off client's is: the case where a server that closes early resets the client's writes. Any
 * socket error until the connection closes (EPIPE, ECONNRESET) rejects, an answer read or not.
 */
function send(url: URL, { path, headers, body, framing, expectContinue = false }: Send) {
  return new Promise<Answer>((resolve, reject) => {
    let answer: Answer | undefined;
    let failure: string | undefined;
    let continued = false;
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path,
        method: path.startsWith('/v1/tenants/') ? 'PUT' : 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          ...headers,
          ...(framing === 'content-length' ? { 'content-length': String(body.length) } : {}),
          ...(expectContinue ? { expect: '100-continue' } : {}),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          answer = {
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            continued,
          };
          // A client told not to send its body closes the connection instead.
          if (expectContinue && !continued) request.destroy();
        });
      },
    );
    request.on('error', (error: NodeJS.ErrnoException) => {
      failure ??= error.code ?? error.message;
    });
    request.on('close', () => {
      if (failure === undefined && answer) resolve(answer);
      else reject(new Error(failure ?? 'closed without an answer'));
    });
    if (expectContinue) {
      request.flushHeaders();
      request.on('continue', () => {
        continued = true;
        void writeSlowly(request, body);
      });
    } else {
      void writeSlowly(request, body);
    }
  });
}

/** Sends the same request SENDS times, IN_FLIGHT at once; a failed exchange is its error code. */
async function sendMany(url: URL, request: Send): Promise<(Answer | string)[]> {
  const answers: (Answer | string)[] = [];
  let started = 0;
  const worker = async () => {
    while (started < SENDS) {
      started += 1;
      answers.push(await send(url, request).catch((error: Error) => error.message));
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
  return answers;
}

function expectAnswered(answers: (Answer | string)[], status: number, code: string): void {
  const statuses = answers.map((answer) => (typeof answer === 'string' ? answer : answer.status));
  expect(statuses).toEqual(Array(SENDS).fill(status));
  for (const answer of answers as Answer[]) {
    expect(JSON.parse(answer.body)).toEqual({ error: { code, message: expect.any(String) } });
  }
}

/** A JSON body of `bytes` bytes (one long string property), valid apart from its size. */
function jsonOf(bytes: number, fill = (length: number) => 'x'.repeat(length)): Buffer {
  const prefix = '{"events":[],"pad":"';
  return Buffer.from(`${prefix}${fill(bytes - prefix.length - 2)}"}`);
}

/** Text that gzip shrinks only to about three quarters: a gzip body still over the limit as sent. */
const base64Noise = (length: number) =>
  randomBytes(Math.ceil((length * 3) / 4))
    .toString('base64')
    .slice(0, length);

let env: TestEnv;
let tokens: Tokens;
let url: URL;
let writeKey: string;

beforeAll(async () => {
  ({ env, tokens } = await openSeededEnv({ collector: true }));
  writeKey = await mintWriteKey(env, tokens.tenant);
  url = new URL(await env.app.listen({ port: 0, host: '127.0.0.1' }));
});

afterAll(async () => {
  await env?.close();
});

const browser = () => ({ 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' });
const server = () => ({ authorization: `Bearer ${tokens.collector}` });
const segment = () => ({ authorization: basicAuth(writeKey) });
const control = () => ({ authorization: `Bearer ${tokens.tenant}` });

/** Every route that takes a body from outside, by what it authenticates with. */
const INTAKE_ROUTES: (readonly [string, () => Record<string, string>])[] = [
  ['/v1/events', browser],
  ['/v1/events/batch', browser],
  ['/v1/server/events', server],
  ['/v1/server/events/batch', server],
  ['/v1/batch', segment],
  ...TRACKING_CALLS.map((call) => [`/v1/${call}`, segment] as const),
  ['/v1/tenants/acme/event-types/oversized', control],
];

const FRAMINGS: Framing[] = ['content-length', 'chunked'];

describe('a 2 MiB body, over the 1 MiB limit', () => {
  const body = jsonOf(OVERSIZED_BYTES);

  it.each(
    INTAKE_ROUTES.flatMap(([path, headers]) =>
      FRAMINGS.map((framing) => ({ path, headers, framing })),
    ),
  )(
    'to $path ($framing) is answered 413 with the error body, 50 times of 50',
    async ({ path, headers, framing }) => {
      expect(OVERSIZED_BYTES).toBeGreaterThan(BODY_LIMIT_BYTES);
      expectAnswered(
        await sendMany(url, { path, headers: headers(), body, framing }),
        413,
        'payload_too_large',
      );
    },
  );

  it.each(FRAMINGS)(
    'gzipped, inflating past the limit, is answered 413 with the error body, 50 times of 50 (%s)',
    async (framing) => {
      const gzipped = gzipSync(jsonOf(OVERSIZED_BYTES, base64Noise));
      expect(gzipped.length).toBeGreaterThan(BODY_LIMIT_BYTES);
      for (const [path, headers] of [
        ['/v1/events/batch', browser],
        ['/v1/batch', segment],
      ] as const) {
        expectAnswered(
          await sendMany(url, {
            path,
            headers: { ...headers(), 'content-encoding': 'gzip' },
            body: gzipped,
            framing,
          }),
          413,
          'payload_too_large',
        );
      }
    },
  );

  it('sent by fetch over kept-alive connections is answered 413 with the error body, 50 times of 50', async () => {
    const answers = await Promise.all(
      Array.from({ length: SENDS }, async () => {
        const response = await fetch(new URL('/v1/server/events/batch', url), {
          method: 'POST',
          headers: { ...server(), 'content-type': 'application/json' },
          body,
        });
        return { status: response.status, body: await response.text() };
      }),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
    }
  });

  it('with a token refused before the body is read is answered 401, 50 times of 50', async () => {
    expectAnswered(
      await sendMany(url, {
        path: '/v1/server/events/batch',
        headers: { authorization: 'Bearer cpc_unknown' },
        body,
        framing: 'content-length',
      }),
      401,
      'unauthorized',
    );
  });

  it('with Expect: 100-continue is answered 413 without being asked for, and the connection closed', async () => {
    const answer = await send(url, {
      path: '/v1/server/events/batch',
      headers: server(),
      body,
      framing: 'content-length',
      expectContinue: true,
    });
    expect(answer).toMatchObject({ status: 413, continued: false });
    expect(answer.headers.connection).toBe('close');
    expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
  });
});

describe('a body within the limit', () => {
  it('with Expect: 100-continue is asked for and accepted', async () => {
    const answer = await send(url, {
      path: '/v1/server/events',
      headers: server(),
      body: Buffer.from(JSON.stringify(envelope({ anon: 'continued' }))),
      framing: 'content-length',
      expectContinue: true,
    });
    expect(answer, answer.body).toMatchObject({ status: 202, continued: true });
    expect(JSON.parse(answer.body)).toEqual({ accepted: 1 });
  });
});

describe('a body declared longer than what is read of a refused body', () => {
  it('is answered 413 at once, before it is sent, and the connection closed', async () => {
    const answer = await new Promise<{ status: number; connection?: string; body: string }>(
      (resolve, reject) => {
        const request = httpRequest({
          host: url.hostname,
          port: url.port,
          path: '/v1/server/events/batch',
          method: 'POST',
          agent: false,
          headers: {
            ...server(),
            'content-type': 'application/json',
            'content-length': String(UNREAD_BODY_DRAIN_BYTES + 1),
          },
        });
        request.on('response', (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => {
            text += chunk.toString('utf8');
          });
          response.on('end', () =>
            resolve({
              status: response.statusCode ?? 0,
              connection: response.headers.connection,
              body: text,
            }),
          );
        });
        request.on('error', reject);
        request.flushHeaders();
      },
    );
    expect(answer.status).toBe(413);
    expect(answer.connection).toBe('close');
    expect(JSON.parse(answer.body).error.code).toBe('payload_too_large');
  });
});
