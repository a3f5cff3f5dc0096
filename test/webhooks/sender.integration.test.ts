import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import { LONGEST_PAUSE_MS, retryPauseMs } from '../../src/webhooks/backoff.js';
import { WebhookSender } from '../../src/webhooks/sender.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { defineBuyers } from '../helpers/metrics.js';
import { Receiver } from '../helpers/receiver.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';
import { waitUntil } from '../helpers/wait.js';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const VERSION = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  }
).version;
/** Long enough that no failed row is due again within a test unless the test makes it so. */
const RETRY_BASE_MS = 60_000;

interface OutboxRow {
  webhook_id: string;
  status: string;
  attempts: number;
  last_error: string | null;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
}

/** A server that answers every request with `handle`, closed with its connections. */
async function listening(
  handle: Parameters<typeof createServer>[1],
): Promise<{ url: string; close(): Promise<void> }> {
  const server: Server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe('the webhook sender', () => {
  let env: TestEnv;
  let tokens: Tokens;
  const closers: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    // Rows are queued only while a receiver is configured; each test points its sender elsewhere.
    ({ env, tokens } = await openSeededEnv({
      collector: true,
      config: { webhook_url: 'http://127.0.0.1:1/unused', webhook_secret: SECRET },
    }));
    await defineBuyers(env, tokens.tenant);
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await env.close();
  });

  /** `count` customers enter the segment: one outbox row each. */
  const queue = async (count: number) => {
    const orders = Array.from({ length: count }, (_, index) =>
      envelope({
        name: 'order_completed',
        identifiers: { email: `buyer${index}@shop.test` },
        properties: { order_id: `o${index}` },
      }),
    );
    const response = await sendServer(env, tokens.collector, orders);
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
  };
  const senderTo = (url: string, attemptTimeoutMs?: number) =>
    new WebhookSender(env.context, {
      url,
      secret: SECRET,
      retryBaseMs: RETRY_BASE_MS,
      pollMs: 60_000,
      ...(attemptTimeoutMs === undefined ? {} : { attemptTimeoutMs }),
    });
  const outbox = async (): Promise<OutboxRow[]> => {
    const listing = await call(
      env.app,
      operatorToken(env.context.dataDir.masterKey),
      'GET',
      '/v1/operator/webhooks?limit=500',
    );
    expect(listing.statusCode, listing.body).toBe(200);
    return listing.json().webhooks;
  };

  it('names cds and its version in the user-agent', async () => {
    const receiver = await Receiver.start();
    closers.push(() => receiver.close());
    await queue(1);
    await senderTo(receiver.url).deliverDue();
    expect(receiver.received.map((request) => request.headers['user-agent'])).toEqual([
      `cds/${VERSION}`,
    ]);
  });

  it('runs another round at once when asked during one, without waiting for its poll', async () => {
    let releaseFirst = () => {};
    const firstHeld = new Promise<void>((resolve) => {
      releaseFirst = resolve;
    });
    const profiles: string[] = [];
    const receiver = await listening((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => {
        body += chunk.toString();
      });
      request.on('end', async () => {
        profiles.push(JSON.parse(body).data.profile_id);
        if (profiles.length === 1) await firstHeld;
        response.end();
      });
    });
    closers.push(receiver.close);
    await queue(1);
    // Polls once a minute: only asking makes a round.
    const sender = senderTo(receiver.url);
    closers.push(() => sender.stop());
    sender.start();
    await waitUntil(() => profiles.length === 1, 'the first round to send');
    const order = envelope({
      name: 'order_completed',
      identifiers: { email: 'later@shop.test' },
      properties: { order_id: 'later' },
    });
    expect((await sendServer(env, tokens.collector, [order])).statusCode).toBe(202);
    await env.ingest();
    // As the landing loop asks after its commit, while the first round still waits.
    sender.tick();
    releaseFirst();
    await waitUntil(() => profiles.length === 2, 'a second round, asked during the first');
    expect(new Set(profiles).size).toBe(2);
  });

  describe('last_error keeps the cause', () => {
    it('a refused connection', async () => {
      const closed = await listening(() => undefined);
      await closed.close();
      await queue(1);
      await senderTo(closed.url).deliverDue();
      expect(await outbox()).toMatchObject([
        { status: 'pending', attempts: 1, last_error: 'connection refused' },
      ]);
    });

    it('a host no DNS knows', async () => {
      await queue(1);
      await senderTo('http://cds-no-such-host.invalid/hooks').deliverDue();
      const [row] = await outbox();
      // ENOTFOUND from a resolver that answers, EAI_AGAIN from one that cannot be reached.
      expect(row?.last_error).toMatch(/^host not found \(DNS( lookup failed)?\)$/);
    });

    it('a receiver that never answers', async () => {
      const silent = await listening(() => undefined);
      closers.push(silent.close);
      await queue(1);
      await senderTo(silent.url, 300).deliverDue();
      expect(await outbox()).toMatchObject([
        { status: 'pending', attempts: 1, last_error: 'timeout: no answer within 300 ms' },
      ]);
    });

    it('a 5xx, with the start of its body on one line without controls', async () => {
      const failing = await listening((_request, response) => {
        response.statusCode = 503;
        response.end(`upstream\n\u001b[31m down\u202e   ${'x'.repeat(5000)}`);
      });
      closers.push(failing.close);
      const blank = await listening((_request, response) => {
        response.statusCode = 502;
        response.end();
      });
      closers.push(blank.close);
      await queue(1);
      await senderTo(failing.url).deliverDue();
      const [row] = await outbox();
      expect(row?.last_error).toBe(`status 503: upstream [31m down ${'x'.repeat(101)}`);
      await env.context.store.write((session) =>
        session.runText('UPDATE webhook_outbox SET next_attempt_at = NULL'),
      );
      await senderTo(blank.url).deliverDue();
      expect(await outbox()).toMatchObject([{ attempts: 2, last_error: 'status 502' }]);
    });
  });

  describe('retries with jitter', () => {
    it('waits a random point in the upper half of each doubling step, at most an hour', () => {
      for (const attempts of [0, 1, 2, 5, 20]) {
        const step = Math.min(1000 * 2 ** attempts, LONGEST_PAUSE_MS);
        const draws = Array.from({ length: 5000 }, () => retryPauseMs(attempts, 1000));
        expect(Math.min(...draws)).toBeGreaterThanOrEqual(step / 2);
        expect(Math.max(...draws)).toBeLessThanOrEqual(step);
        expect(new Set(draws).size).toBeGreaterThan(Math.min(400, step / 4));
        const mean = draws.reduce((sum, draw) => sum + draw, 0) / draws.length;
        expect(Math.abs(mean / step - 0.75)).toBeLessThan(0.02);
        const below = draws.filter((draw) => draw < step * 0.75).length / draws.length;
        expect(Math.abs(below - 0.5)).toBeLessThan(0.04);
      }
      expect(retryPauseMs(3, 1000, () => 0)).toBe(4000);
      expect(retryPauseMs(3, 1000, () => 1)).toBe(8000);
    });

    it('spreads the next attempts of deliveries that failed together', async () => {
      const failing = await listening((_request, response) => {
        response.statusCode = 500;
        response.end();
      });
      closers.push(failing.close);
      await queue(20);
      const sender = senderTo(failing.url);
      for (const [attempts, step] of [
        [1, RETRY_BASE_MS],
        [2, 2 * RETRY_BASE_MS],
      ] as const) {
        await sender.deliverDue();
        const rows = await outbox();
        expect(rows).toHaveLength(20);
        const waits = rows.map((row) => {
          expect(row.attempts).toBe(attempts);
          return Date.parse(row.next_attempt_at ?? '') - Date.parse(row.last_attempt_at ?? '');
        });
        expect(Math.min(...waits)).toBeGreaterThanOrEqual(step / 2);
        expect(Math.max(...waits)).toBeLessThanOrEqual(step);
        expect(new Set(waits).size).toBeGreaterThan(10);
        await env.context.store.write((session) =>
          session.runText('UPDATE webhook_outbox SET next_attempt_at = NULL'),
        );
      }
    });
  });
});
