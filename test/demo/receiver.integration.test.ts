import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DemoReceiver } from '../../src/demo/receiver.js';
import { WebhookSender } from '../../src/webhooks/sender.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { defineBuyers } from '../helpers/metrics.js';
import { Receiver } from '../helpers/receiver.js';
import { openSeededEnv } from '../helpers/seeded.js';
import type { Tokens } from '../helpers/tenant.js';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

describe("the demo's receiver", () => {
  let env: TestEnv;
  let tokens: Tokens;
  const closers: (() => Promise<void>)[] = [];

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({
      collector: true,
      config: { webhook_url: 'http://127.0.0.1:1/unused', webhook_secret: SECRET },
    }));
    await defineBuyers(env, tokens.tenant);
    const response = await sendServer(env, tokens.collector, [
      envelope({
        name: 'order_completed',
        identifiers: { email: 'ann@shop.test' },
        properties: { order_id: 'o1' },
      }),
    ]);
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
  });
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
    await env.close();
  });

  const sender = (url: string) =>
    new WebhookSender(env.context, { url, secret: SECRET, retryBaseMs: 60_000, pollMs: 60_000 });

  it('verifies a real delivery with the standardwebhooks package', async () => {
    const demo = await DemoReceiver.start(SECRET);
    closers.push(() => demo.close());
    await sender(demo.url).deliverDue();
    expect(demo.received).toMatchObject([
      { type: 'segment.entered', segmentId: 'buyers', verified: true },
    ]);
  });

  it('refuses a tampered delivery, another secret and a body that is no JSON, with 401', async () => {
    const capture = await Receiver.start();
    closers.push(() => capture.close());
    await sender(capture.url).deliverDue();
    const [real] = capture.received;
    const demo = await DemoReceiver.start(SECRET);
    closers.push(() => demo.close());
    const post = async (body: string, headers: Record<string, string>) =>
      (await fetch(demo.url, { method: 'POST', headers, body })).status;
    const signed = {
      'content-type': 'application/json',
      'webhook-id': real?.headers['webhook-id'] ?? '',
      'webhook-timestamp': real?.headers['webhook-timestamp'] ?? '',
      'webhook-signature': real?.headers['webhook-signature'] ?? '',
    };
    expect(await post(real?.body ?? '', signed)).toBe(204);
    const tampered = (real?.body ?? '').replace('"backfill":false', '"backfill":true');
    expect(tampered).not.toBe(real?.body);
    expect(await post(tampered, signed)).toBe(401);
    const other = await DemoReceiver.start(`whsec_${randomBytes(24).toString('base64')}`);
    closers.push(() => other.close());
    expect(
      (await fetch(other.url, { method: 'POST', headers: signed, body: real?.body })).status,
    ).toBe(401);
    expect(await post('not json', signed)).toBe(401);
    expect(demo.received.map((webhook) => webhook.verified)).toEqual([true, false, false]);
    expect(demo.received[2]).toMatchObject({ type: 'unreadable', verified: false });
  });
});
