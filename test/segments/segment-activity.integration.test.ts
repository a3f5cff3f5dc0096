import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookSender } from '../../src/webhooks/sender.js';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { defineMetric } from '../helpers/metrics.js';
import type { Receiver } from '../helpers/receiver.js';
import { call, type Tokens } from '../helpers/tenant.js';
import { openWebhookEnv } from '../helpers/webhook-env.js';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const SEGMENTS = '/v1/tenants/acme/segments';
const HOUR = 60 * 60 * 1000;

/** The console's segment page reads these: member counts over time, deliveries and their retry. */
describe("a segment's member counts and webhook deliveries", () => {
  let env: TestEnv;
  let tokens: Tokens;
  let receiver: Receiver;
  let sender: WebhookSender;

  beforeEach(async () => {
    ({ env, tokens, receiver, sender } = await openWebhookEnv(SECRET));
    await defineMetric(env, tokens.tenant, {
      metric_name: 'orders',
      event_name: 'order_completed',
      value_kind: 'count',
    });
    for (const [id, value] of [
      ['buyers', 1],
      ['loyal', 2],
    ] as const) {
      const created = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/${id}`, {
        workspace_id: 'eu',
        display_name: id,
        predicate: { metric: 'orders', op: 'gte', value },
      });
      expect(created.statusCode, created.body).toBe(201);
    }
    await env.ingest();
  });
  afterEach(async () => {
    await env.close();
    await receiver.close();
  });

  let orderNumber = 0;
  const order = (email: string): EventSpec => ({
    name: 'order_completed',
    identifiers: { email },
    properties: { order_id: `o${++orderNumber}` },
  });
  const send = async (...specs: EventSpec[]) => {
    const response = await sendServer(env, tokens.collector, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
  };
  const get = (path: string, token = tokens.workspace) => call(env.app, token, 'GET', path);

  describe('GET /segments/{id}/member-counts', () => {
    it('gives the count after each change, oldest first, ending at the current count', async () => {
      await send(order('ann@shop.test'));
      env.clock.advance(HOUR);
      await send(order('bob@shop.test'), order('cy@shop.test'));
      const answer = await get(`${SEGMENTS}/buyers/member-counts?workspace_id=eu`);
      expect(answer.statusCode, answer.body).toBe(200);
      const { points, member_count } = answer.json();
      expect(member_count).toBe(3);
      expect(points.map((point: { member_count: number }) => point.member_count)).toEqual([1, 3]);
      expect(points.map((point: { change: number }) => point.change)).toEqual([1, 2]);
      expect(Date.parse(points[1].at) - Date.parse(points[0].at)).toBe(HOUR);
      const listed = (await get(`${SEGMENTS}?workspace_id=eu`)).json().segments;
      expect(
        listed.find((s: { segment_id: string }) => s.segment_id === 'buyers').member_count,
      ).toBe(3);
      // A segment whose webhooks need no consent has no member without it.
      expect((await get(`${SEGMENTS}/loyal/member-counts?workspace_id=eu`)).json()).toEqual({
        member_count: 0,
        members_without_consent: 0,
        points: [],
      });
    });

    it('refuses an unknown segment, a missing workspace and another workspace', async () => {
      expect((await get(`${SEGMENTS}/nobody/member-counts?workspace_id=eu`)).statusCode).toBe(404);
      const missing = await get(`${SEGMENTS}/buyers/member-counts`, tokens.tenant);
      expect(missing.statusCode).toBe(422);
      expect(missing.json().error.details).toEqual([
        { path: 'workspace_id', message: 'is required' },
      ]);
      const other = await get(
        `${SEGMENTS}/buyers/member-counts?workspace_id=eu`,
        tokens.otherWorkspace,
      );
      expect(other.statusCode).toBe(403);
      const otherTenant = await get(
        `${SEGMENTS}/buyers/member-counts?workspace_id=eu`,
        tokens.otherTenant,
      );
      expect(otherTenant.statusCode).toBe(403);
    });
  });

  describe('GET /segments/{id}/webhooks and POST …/webhooks/retry', () => {
    /** Ann's two orders put her in both segments; both deliveries fail for a day and are given up. */
    const giveUpTwoDeliveries = async () => {
      receiver.script.push(500, 503, 500, 503);
      await send(order('ann@shop.test'), order('ann@shop.test'));
      await sender.deliverDue();
      // Both rows have tried for a day: the next failure gives them up.
      await env.context.store.write((session) =>
        session.runText(
          'UPDATE webhook_outbox SET first_attempt_at = first_attempt_at - INTERVAL 25 HOUR, next_attempt_at = NULL',
        ),
      );
      await sender.deliverDue();
    };

    it("lists one segment's deliveries with their errors, and retries its failed ones only", async () => {
      await giveUpTwoDeliveries();
      const failed = await get(`${SEGMENTS}/buyers/webhooks?workspace_id=eu&status=failed`);
      expect(failed.statusCode, failed.body).toBe(200);
      expect(failed.json().webhooks).toMatchObject([
        { segment_id: 'buyers', type: 'segment.entered', status: 'failed', attempts: 2 },
      ]);
      expect(failed.json().webhooks[0].last_error).toMatch(/^status 50[03]$/);
      expect(
        (await get(`${SEGMENTS}/loyal/webhooks?workspace_id=eu`)).json().webhooks,
      ).toMatchObject([{ segment_id: 'loyal', status: 'failed' }]);

      const retry = (segment: string, body: Record<string, unknown>, token = tokens.tenant) =>
        call(env.app, token, 'POST', `${SEGMENTS}/${segment}/webhooks/retry`, {
          workspace_id: 'eu',
          ...body,
        });
      expect((await retry('buyers', {}, tokens.workspace)).statusCode).toBe(403);
      expect((await retry('nobody', {})).statusCode).toBe(404);
      // Another segment's delivery is not this segment's to retry.
      const loyalId = (await get(`${SEGMENTS}/loyal/webhooks?workspace_id=eu`)).json().webhooks[0]
        .webhook_id;
      expect((await retry('buyers', { webhook_id: loyalId })).json()).toEqual({ requeued: 0 });
      expect((await retry('buyers', {})).json()).toEqual({ requeued: 1 });
      await sender.deliverDue();
      expect(
        (await get(`${SEGMENTS}/buyers/webhooks?workspace_id=eu`)).json().webhooks,
      ).toMatchObject([{ status: 'delivered', last_error: null }]);
      expect(
        (await get(`${SEGMENTS}/loyal/webhooks?workspace_id=eu`)).json().webhooks,
      ).toMatchObject([{ status: 'failed' }]);
    });

    it("lists, counts and retries the workspace's deliveries across its segments (the tenant's Webhooks page)", async () => {
      await giveUpTwoDeliveries();
      const WEBHOOKS = '/v1/tenants/acme/webhooks';
      const listed = await get(`${WEBHOOKS}?workspace_id=eu`);
      expect(listed.statusCode, listed.body).toBe(200);
      expect(
        listed
          .json()
          .webhooks.map((row: { segment_id: string; status: string }) => [
            row.segment_id,
            row.status,
          ])
          .sort(),
      ).toEqual([
        ['buyers', 'failed'],
        ['loyal', 'failed'],
      ]);
      expect(
        (await get(`${WEBHOOKS}?workspace_id=eu&segment_id=loyal`)).json().webhooks,
      ).toMatchObject([{ segment_id: 'loyal' }]);
      expect((await get(`${WEBHOOKS}?workspace_id=eu&status=delivered`)).json().webhooks).toEqual(
        [],
      );
      expect((await get(WEBHOOKS, tokens.tenant)).statusCode).toBe(422);
      expect((await get(`${WEBHOOKS}?workspace_id=nowhere`, tokens.tenant)).statusCode).toBe(404);
      expect((await get(`${WEBHOOKS}?workspace_id=eu`, tokens.otherTenant)).statusCode).toBe(403);

      const totals = async () =>
        (await get('/v1/tenants/acme/webhook-totals?workspace_id=eu')).json();
      const failedTwo = { pending: 0, delivered: 0, failed: 2, withheld: 0 };
      expect(await totals()).toEqual({
        destination_host: new URL(receiver.url).host,
        last_24h: failedTwo,
        last_7d: failedTwo,
      });

      const retry = (body: Record<string, unknown>, token = tokens.tenant) =>
        call(env.app, token, 'POST', `${WEBHOOKS}/retry`, { workspace_id: 'eu', ...body });
      expect((await retry({}, tokens.workspace)).statusCode).toBe(403);
      expect((await retry({ workspace_id: 'nowhere' })).statusCode).toBe(404);
      const buyersId = listed
        .json()
        .webhooks.find((row: { segment_id: string }) => row.segment_id === 'buyers').webhook_id;
      expect((await retry({ webhook_id: buyersId })).json()).toEqual({ requeued: 1 });
      await sender.deliverDue();
      expect(await totals()).toMatchObject({
        last_24h: { pending: 0, delivered: 1, failed: 1, withheld: 0 },
      });
      expect((await retry({})).json()).toEqual({ requeued: 1 });
      await sender.deliverDue();
      expect((await totals()).last_7d).toEqual({
        pending: 0,
        delivered: 2,
        failed: 0,
        withheld: 0,
      });
      // Older than a day, counted in the week only; older than a week, in neither.
      env.clock.advance(2 * 24 * HOUR);
      expect(await totals()).toMatchObject({
        last_24h: { delivered: 0 },
        last_7d: { delivered: 2 },
      });
      env.clock.advance(6 * 24 * HOUR);
      expect((await totals()).last_7d).toEqual({
        pending: 0,
        delivered: 0,
        failed: 0,
        withheld: 0,
      });
    });

    it('refuses a status it does not know', async () => {
      const answer = await get(`${SEGMENTS}/buyers/webhooks?workspace_id=eu&status=lost`);
      expect(answer.statusCode).toBe(422);
    });
  });
});
