import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import type { WebhookSender } from '../../src/webhooks/sender.js';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { defineMetric } from '../helpers/metrics.js';
import type { Receiver } from '../helpers/receiver.js';
import { call, type Tokens } from '../helpers/tenant.js';
import { openWebhookEnv } from '../helpers/webhook-env.js';

const DAY = 24 * 60 * 60 * 1000;
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const SEGMENTS = '/v1/tenants/acme/segments';
const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';

describe('segment membership and webhooks', () => {
  let env: TestEnv;
  let tokens: Tokens;
  let receiver: Receiver;
  let sender: WebhookSender;

  beforeEach(async () => {
    ({ env, tokens, receiver, sender } = await openWebhookEnv(SECRET));
    for (const definition of [
      { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' },
      {
        metric_name: 'orders_7d',
        event_name: 'order_completed',
        value_kind: 'count',
        window_days: 7,
      },
    ]) {
      await defineMetric(env, tokens.tenant, definition);
    }
  });
  afterEach(async () => {
    await env.close();
    await receiver.close();
  });

  let orderNumber = 0;
  const order = (email: string, at = '2026-03-01T09:00:00Z'): EventSpec => ({
    name: 'order_completed',
    at,
    identifiers: { email },
    properties: { order_id: `o${++orderNumber}` },
  });
  const send = async (...specs: EventSpec[]) => {
    const response = await sendServer(env, tokens.collector, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
  };
  const createSegment = async (id: string, body: Record<string, unknown> = {}) => {
    const response = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/${id}`, {
      workspace_id: 'eu',
      display_name: id,
      predicate: { metric: 'orders', op: 'gte', value: 2 },
      ...body,
    });
    expect(response.statusCode, response.body).toBe(201);
    await env.ingest();
  };
  const setStatus = async (id: string, status: string) => {
    const response = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/${id}/status`, {
      workspace_id: 'eu',
      status,
    });
    expect(response.statusCode, response.body).toBe(200);
    await env.ingest();
  };
  const profileOf = async (email: string) =>
    (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?email=${email}`)).json()
      .profile_id as string;
  const members = async (id: string) => {
    const response = await call(
      env.app,
      tokens.workspace,
      'GET',
      `${SEGMENTS}/${id}/members?workspace_id=eu`,
    );
    expect(response.statusCode, response.body).toBe(200);
    return (response.json().members as { profile_id: string; email: string }[])
      .map((row) => row.email)
      .sort();
  };
  const memberCount = async (id: string) => {
    const listed = (await call(env.app, tokens.tenant, 'GET', `${SEGMENTS}?workspace_id=eu`)).json()
      .segments as { segment_id: string; member_count: number }[];
    return listed.find((segment) => segment.segment_id === id)?.member_count;
  };
  const delivered = async () => {
    await sender.deliverDue();
    // Deliveries of one round go out concurrently; their order is not a contract.
    return receiver
      .bodies()
      .map((body) => ({
        type: body.type,
        segment_id: body.data.segment_id as string,
        profile_id: body.data.profile_id as string,
        backfill: body.data.backfill,
      }))
      .sort(
        (a, b) =>
          a.type.localeCompare(b.type) ||
          a.segment_id.localeCompare(b.segment_id) ||
          a.profile_id.localeCompare(b.profile_id),
      );
  };

  it('enters a profile when it qualifies and exits it when a window decays, with counts equal to lists', async () => {
    await createSegment('active-buyers', {
      predicate: { metric: 'orders_7d', op: 'gte', value: 2 },
    });
    await send(order('ann@shop.test'), order('bob@shop.test'));
    expect(await members('active-buyers')).toEqual([]);
    await send(order('ann@shop.test', '2026-02-26T09:00:00Z'));
    expect(await members('active-buyers')).toEqual(['ann@shop.test']);
    expect(await memberCount('active-buyers')).toBe(1);
    const ann = await profileOf('ann@shop.test');

    env.clock.advance(5 * DAY);
    await env.ingest();
    expect(await members('active-buyers')).toEqual([]);
    expect(await memberCount('active-buyers')).toBe(0);

    expect(await delivered()).toEqual([
      { type: 'segment.entered', segment_id: 'active-buyers', profile_id: ann, backfill: false },
      { type: 'segment.exited', segment_id: 'active-buyers', profile_id: ann, backfill: false },
    ]);
    const history = (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${ann}/history`))
      .json()
      .entries.filter((entry: { kind: string }) => entry.kind.startsWith('segment_'));
    expect(history).toEqual([
      { at: '2026-03-06T12:00:00.000Z', kind: 'segment_exit', segment_id: 'active-buyers' },
      { at: '2026-03-01T12:00:00.000Z', kind: 'segment_enter', segment_id: 'active-buyers' },
    ]);
  });

  it('marks the first evaluation after create as backfill and sends it only when on_backfill is set', async () => {
    await send(order('ann@shop.test'), order('ann@shop.test'), order('bob@shop.test'));
    await createSegment('quiet', {});
    await createSegment('loud', {
      automations: { on_enter: true, on_exit: true, on_backfill: true },
    });
    expect(await members('quiet')).toEqual(['ann@shop.test']);
    expect(await members('loud')).toEqual(['ann@shop.test']);
    const ann = await profileOf('ann@shop.test');
    expect(await delivered()).toEqual([
      { type: 'segment.entered', segment_id: 'loud', profile_id: ann, backfill: true },
    ]);
    await send(order('bob@shop.test'));
    const bob = await profileOf('bob@shop.test');
    expect((await delivered()).filter((body) => body.profile_id === bob)).toEqual([
      { type: 'segment.entered', segment_id: 'loud', profile_id: bob, backfill: false },
      { type: 'segment.entered', segment_id: 'quiet', profile_id: bob, backfill: false },
    ]);
  });

  it('freezes a paused segment, skips draft and archived ones, and re-evaluates on activation', async () => {
    await createSegment('buyers');
    await send(order('ann@shop.test'), order('ann@shop.test'));
    expect(await members('buyers')).toEqual(['ann@shop.test']);

    await setStatus('buyers', 'paused');
    await send(order('bob@shop.test'), order('bob@shop.test'));
    expect(await members('buyers')).toEqual(['ann@shop.test']);

    await setStatus('buyers', 'draft');
    await send(order('cat@shop.test'), order('cat@shop.test'));
    expect(await members('buyers')).toEqual(['ann@shop.test']);

    await setStatus('buyers', 'active');
    expect(await members('buyers')).toEqual(['ann@shop.test', 'bob@shop.test', 'cat@shop.test']);
    const bodies = await delivered();
    expect(bodies.map((body) => [body.type, body.backfill])).toEqual([['segment.entered', false]]);

    await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/buyers/status`, {
      workspace_id: 'eu',
      status: 'archived',
    });
    await send(order('dan@shop.test'), order('dan@shop.test'));
    expect(await members('buyers')).toEqual(['ann@shop.test', 'bob@shop.test', 'cat@shop.test']);
    expect(await memberCount('buyers')).toBe(3);
  });

  it('emits exits for the difference when a segment comes back to active', async () => {
    await createSegment('recent', { predicate: { metric: 'orders_7d', op: 'gte', value: 1 } });
    await send(order('ann@shop.test'), order('bob@shop.test', '2026-02-23T10:00:00Z'));
    expect(await members('recent')).toEqual(['ann@shop.test', 'bob@shop.test']);
    await setStatus('recent', 'paused');
    env.clock.advance(DAY);
    await env.ingest();
    expect(await members('recent')).toEqual(['ann@shop.test', 'bob@shop.test']);
    await setStatus('recent', 'active');
    expect(await members('recent')).toEqual(['ann@shop.test']);
    const bob = await profileOf('bob@shop.test');
    expect((await delivered()).filter((body) => body.type === 'segment.exited')).toEqual([
      { type: 'segment.exited', segment_id: 'recent', profile_id: bob, backfill: false },
    ]);
  });

  it('evaluates more segments in one workspace than one membership mask holds', async () => {
    for (let index = 0; index < 70; index++) {
      const response = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/s${index}`, {
        workspace_id: 'eu',
        display_name: `s${index}`,
        predicate: { metric: 'orders', op: 'gte', value: index % 2 === 0 ? 1 : 2 },
        automations: { on_enter: false, on_exit: false, on_backfill: false },
      });
      expect(response.statusCode).toBe(201);
    }
    await send(order('ann@shop.test'));
    const listed = async () =>
      (await call(env.app, tokens.tenant, 'GET', `${SEGMENTS}?workspace_id=eu&limit=100`)).json()
        .segments as { segment_id: string; member_count: number }[];
    const full = (await listed()).filter((segment) => segment.member_count === 1);
    expect(full.map((segment) => segment.segment_id).sort()).toEqual(
      Array.from({ length: 35 }, (_, index) => `s${index * 2}`).sort(),
    );
    await send(order('ann@shop.test'));
    expect((await listed()).every((segment) => segment.member_count === 1)).toBe(true);
  });

  it('keeps ingesting when a segment names a metric whose definitions are gone and left nothing', async () => {
    await defineMetric(env, tokens.tenant, {
      metric_name: 'visits',
      event_name: 'page_viewed',
      value_kind: 'count',
    });
    await createSegment('visitors', { predicate: { metric: 'visits', op: 'gte', value: 1 } });
    await createSegment('buyers');
    const deleted = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      '/v1/tenants/acme/metric-definitions?metric_name=visits&event_name=page_viewed',
    );
    expect(deleted.statusCode).toBe(204);
    await send(order('ann@shop.test'), order('ann@shop.test'), {
      identifiers: { email: 'ann@shop.test' },
    });
    expect(await members('buyers')).toEqual(['ann@shop.test']);
    expect(await members('visitors')).toEqual([]);
  });

  it('sends nothing for a change whose automation flag is off', async () => {
    await createSegment('silent', {
      automations: { on_enter: false, on_exit: false, on_backfill: false },
    });
    await send(order('ann@shop.test'), order('ann@shop.test'));
    expect(await members('silent')).toEqual(['ann@shop.test']);
    expect(await delivered()).toEqual([]);
    expect(receiver.received).toHaveLength(0);
  });

  it('signs each delivery per Standard Webhooks and never puts an identifier in it', async () => {
    await createSegment('buyers');
    await send(
      { ...order('ann@shop.test'), identifiers: { email: 'ann@shop.test', phone: '9876543210' } },
      order('ann@shop.test'),
    );
    await sender.deliverDue();
    expect(receiver.received).toHaveLength(1);
    const [request] = receiver.received;
    const verified = new Webhook(SECRET).verify(request?.body ?? '', request?.headers ?? {});
    const ann = await profileOf('ann@shop.test');
    expect(verified).toEqual({
      type: 'segment.entered',
      timestamp: '2026-03-01T12:00:00.000Z',
      data: {
        tenant_id: 'acme',
        workspace_id: 'eu',
        segment_id: 'buyers',
        profile_id: ann,
        backfill: false,
      },
    });
    expect(request?.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    for (const secretish of ['ann@shop.test', '9876543210', '+919876543210', 'cookie']) {
      expect(request?.body).not.toContain(secretish);
    }
    expect(() =>
      new Webhook(`whsec_${randomBytes(24).toString('base64')}`).verify(
        request?.body ?? '',
        request?.headers ?? {},
      ),
    ).toThrow();
  });

  it('retries after the receiver answers 500 twice, with the same id, until delivered', async () => {
    receiver.script.push(500, 500);
    await createSegment('buyers');
    await send(order('ann@shop.test'), order('ann@shop.test'));
    for (let round = 0; round < 20 && receiver.received.length < 3; round++) {
      await sender.deliverDue();
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(receiver.received).toHaveLength(3);
    const ids = new Set(receiver.received.map((request) => request.headers['webhook-id']));
    expect(ids.size).toBe(1);
    const listing = await call(
      env.app,
      operatorToken(env.context.dataDir.masterKey),
      'GET',
      '/v1/operator/webhooks?status=delivered',
    );
    expect(listing.json().webhooks).toMatchObject([
      { status: 'delivered', attempts: 3, last_error: null, segment_id: 'buyers' },
    ]);
    await sender.deliverDue();
    expect(receiver.received).toHaveLength(3);
  });

  it('keeps a delivery that failed for 24 hours as failed until an operator retries it', async () => {
    const operator = operatorToken(env.context.dataDir.masterKey);
    receiver.script.push(500, 503);
    await createSegment('buyers');
    await send(order('ann@shop.test'), order('ann@shop.test'));
    await sender.deliverDue();
    await env.context.store.write((session) =>
      session.runText(
        'UPDATE webhook_outbox SET first_attempt_at = first_attempt_at - INTERVAL 25 HOUR, next_attempt_at = NULL',
      ),
    );
    await sender.deliverDue();
    const failed = await call(env.app, operator, 'GET', '/v1/operator/webhooks?status=failed');
    expect(failed.json().webhooks).toMatchObject([
      { status: 'failed', attempts: 2, last_error: 'status 503' },
    ]);
    await sender.deliverDue();
    expect(receiver.received).toHaveLength(2);

    const retried = await call(env.app, operator, 'POST', '/v1/operator/webhooks/retry', {});
    expect(retried.json()).toEqual({ requeued: 1 });
    await sender.deliverDue();
    expect(receiver.received).toHaveLength(3);
    const after = await call(env.app, operator, 'GET', '/v1/operator/webhooks?status=failed');
    expect(after.json().webhooks).toEqual([]);
  });

  it('takes a merged-away profile out of its segments and counts the survivor', async () => {
    await createSegment('buyers');
    await send(order('ann@shop.test'), order('ann@shop.test'));
    await send(
      { ...order('x', '2026-03-01T10:00:00Z'), identifiers: { phone: '9876543210' } },
      { ...order('x', '2026-03-01T10:00:00Z'), identifiers: { phone: '9876543210' } },
    );
    expect(await memberCount('buyers')).toBe(2);
    const ann = await profileOf('ann@shop.test');
    await send({ name: 'signed_up', identifiers: { email: 'ann@shop.test', phone: '9876543210' } });
    expect(await memberCount('buyers')).toBe(1);
    const [survivor] = (
      await call(env.app, tokens.tenant, 'GET', `${SEGMENTS}/buyers/members?workspace_id=eu`)
    ).json().members;
    expect(survivor.profile_id).toBe(ann);
    const view = (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${ann}`)).json();
    expect(view.metrics.orders).toBe(4);
    expect(view.segments.map((s: { segment_id: string }) => s.segment_id)).toEqual(['buyers']);
  });

  it('pages member lists, masks them like the customer table, and answers 404 for an unknown segment', async () => {
    await createSegment('buyers');
    const emails = ['a1@shop.test', 'a2@shop.test', 'a3@shop.test'];
    await send(...emails.flatMap((email) => [order(email), order(email)]));
    const first = await call(
      env.app,
      tokens.workspace,
      'GET',
      `${SEGMENTS}/buyers/members?workspace_id=eu&limit=2`,
    );
    const second = await call(
      env.app,
      tokens.workspace,
      'GET',
      `${SEGMENTS}/buyers/members?workspace_id=eu&limit=2&cursor=${first.json().next_cursor}`,
    );
    const rows = [...first.json().members, ...second.json().members];
    expect(rows).toHaveLength(3);
    expect(second.json().next_cursor).toBeNull();
    const table = await call(
      env.app,
      tokens.workspace,
      'GET',
      `${PROFILES}/summary?segment_id=buyers`,
    );
    expect(table.json().profiles).toEqual(rows);
    expect(rows.map((row: { email: string }) => row.email).sort()).toEqual(emails);

    // A preview asked for a sample shows matching people as the member list shows them.
    const previewOf = (sampleSize?: number) =>
      call(env.app, tokens.tenant, 'POST', `${SEGMENTS}/preview`, {
        workspace_id: 'eu',
        predicate: { metric: 'orders', op: 'gte', value: 2 },
        ...(sampleSize === undefined ? {} : { sample_size: sampleSize }),
      });
    const sampled = (await previewOf(2)).json();
    expect(sampled.matched_profiles).toBe(3);
    expect(sampled.sample).toHaveLength(2);
    const asListed = new Map(
      rows.map((row: { profile_id: string; email: string | null; phone: string | null }) => [
        row.profile_id,
        { profile_id: row.profile_id, email: row.email, phone: row.phone },
      ]),
    );
    for (const person of sampled.sample) expect(person).toEqual(asListed.get(person.profile_id));
    expect((await previewOf()).json().sample).toBeUndefined();
    const tooMany = await previewOf(26);
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.json().error.message).toMatch(/^sample_size: /);

    const missing = await call(
      env.app,
      tokens.workspace,
      'GET',
      `${SEGMENTS}/nope/members?workspace_id=eu`,
    );
    expect(missing.statusCode).toBe(404);
    const otherWorkspace = await call(
      env.app,
      tokens.otherWorkspace,
      'GET',
      `${SEGMENTS}/buyers/members?workspace_id=eu`,
    );
    expect(otherWorkspace.statusCode).toBe(403);
  });
});
