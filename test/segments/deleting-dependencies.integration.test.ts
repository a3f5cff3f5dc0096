import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { defineMetric } from '../helpers/metrics.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const SEGMENTS = '/v1/tenants/acme/segments';
const METRICS = '/v1/tenants/acme/metric-definitions';
const ORDERS = { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' };
const TWO_ORDERS = { metric: 'orders', op: 'gte', value: 2 };

/** Deleting a metric definition or an event type that others use (docs/decisions.md). */
describe('deleting what others use', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  let orderNumber = 0;
  const order = (email: string, workspace = 'eu'): EventSpec => ({
    name: 'order_completed',
    at: '2026-03-01T09:00:00Z',
    identifiers: { email },
    properties: { order_id: `o${++orderNumber}` },
    workspace,
  });
  const send = async (...specs: EventSpec[]) => {
    const response = await sendServer(env, tokens.collector, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().rejected).toEqual([]);
    await env.ingest();
  };
  const createSegment = (id: string, predicate: unknown, workspace = 'eu') =>
    call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/${id}`, {
      workspace_id: workspace,
      display_name: `Segment ${id}`,
      predicate,
    });
  const memberCount = async (id: string, workspace = 'eu') => {
    const listed = (
      await call(env.app, tokens.tenant, 'GET', `${SEGMENTS}?workspace_id=${workspace}`)
    ).json().segments as { segment_id: string; member_count: number }[];
    return listed.find((segment) => segment.segment_id === id)?.member_count;
  };
  const preview = (predicate: unknown, workspace = 'eu') =>
    call(env.app, tokens.tenant, 'POST', `${SEGMENTS}/preview`, {
      workspace_id: workspace,
      predicate,
    });
  const deleteMetric = (query: string) =>
    call(env.app, tokens.tenant, 'DELETE', `${METRICS}?${query}`);

  describe('DELETE /metric-definitions?dry_run=true', () => {
    it('names the segments whose rule compares the metric, in the workspaces it reaches, and deletes nothing', async () => {
      await defineMetric(env, tokens.tenant, ORDERS);
      await defineMetric(env, tokens.tenant, {
        ...ORDERS,
        metric_name: 'us_orders',
        workspace_id: 'us',
      });
      for (const [id, predicate, workspace] of [
        ['buyers', TWO_ORDERS, 'eu'],
        ['nested', { all: [{ not: { metric: 'orders', op: 'exists', value: true } }] }, 'us'],
        ['other', { metric: 'us_orders', op: 'gte', value: 1 }, 'us'],
      ] as const) {
        expect((await createSegment(id, predicate, workspace)).statusCode).toBe(201);
      }

      const answer = await deleteMetric(
        'metric_name=orders&event_name=order_completed&dry_run=true',
      );
      expect(answer.statusCode, answer.body).toBe(200);
      expect(answer.json()).toEqual({
        dry_run: true,
        segments: [
          {
            workspace_id: 'eu',
            segment_id: 'buyers',
            display_name: 'Segment buyers',
            status: 'active',
            still_collected: false,
          },
          {
            workspace_id: 'us',
            segment_id: 'nested',
            display_name: 'Segment nested',
            status: 'active',
            still_collected: false,
          },
        ],
      });
      const listed = await call(env.app, tokens.tenant, 'GET', METRICS);
      expect(listed.json().metric_definitions).toHaveLength(2);
    });

    it('says a segment keeps its metric collected where another definition feeds it', async () => {
      await defineMetric(env, tokens.tenant, ORDERS);
      await defineMetric(env, tokens.tenant, {
        ...ORDERS,
        event_name: 'product_viewed',
        workspace_id: 'eu',
      });
      expect((await createSegment('buyers', TWO_ORDERS)).statusCode).toBe(201);
      const answer = await deleteMetric(
        'metric_name=orders&event_name=order_completed&dry_run=true',
      );
      expect(answer.json().segments).toEqual([
        expect.objectContaining({ segment_id: 'buyers', still_collected: true }),
      ]);
    });

    it('answers 404 for a definition that does not exist, 422 for a bad dry_run', async () => {
      const missing = await deleteMetric(
        'metric_name=orders&event_name=order_completed&dry_run=true',
      );
      expect(missing.statusCode).toBe(404);
      await defineMetric(env, tokens.tenant, ORDERS);
      const bad = await deleteMetric('metric_name=orders&event_name=order_completed&dry_run=yes');
      expect(bad.statusCode).toBe(422);
      expect(bad.json().error.message).toMatch(/^dry_run: must be true or false/);
    });
  });

  describe('a segment whose metric is no longer collected', () => {
    it('keeps its members, and a preview and a new segment of its rule agree with them', async () => {
      await defineMetric(env, tokens.tenant, ORDERS);
      expect((await createSegment('buyers', TWO_ORDERS)).statusCode).toBe(201);
      await send(order('ann@shop.test'), order('ann@shop.test'), order('bob@shop.test'));
      expect(await memberCount('buyers')).toBe(1);

      expect((await deleteMetric('metric_name=orders&event_name=order_completed')).statusCode).toBe(
        204,
      );
      // Collection stops: a third order of Bob's counts for nothing.
      await send(order('bob@shop.test'));
      expect(await memberCount('buyers')).toBe(1);
      const previewed = await preview(TWO_ORDERS);
      expect(previewed.statusCode, previewed.body).toBe(200);
      expect(previewed.json().matched_profiles).toBe(1);
      expect((await createSegment('buyers_again', TWO_ORDERS)).statusCode).toBe(201);
      await env.ingest();
      expect(await memberCount('buyers_again')).toBe(1);
    });

    it('is listed among the metrics a rule can compare, as collected no longer, where it left values', async () => {
      await defineMetric(env, tokens.tenant, ORDERS);
      await defineMetric(env, tokens.tenant, {
        metric_name: 'orders_30d',
        event_name: 'order_completed',
        value_kind: 'count',
        window_days: 30,
        display_name: 'Orders, 30 days',
      });
      await send(order('ann@shop.test'));
      const listed = async (workspace: string) => {
        const response = await call(
          env.app,
          workspace === 'eu' ? tokens.workspace : tokens.tenant,
          'GET',
          `/v1/tenants/acme/segment-metrics?workspace_id=${workspace}`,
        );
        expect(response.statusCode, response.body).toBe(200);
        return response.json().metrics as { metric_name: string; collected: boolean }[];
      };
      const feeding = {
        event_name: 'order_completed',
        workspace_id: '*',
        value_kind: 'count',
        value_path: null,
        aggregation: null,
      };
      expect(await listed('eu')).toEqual([
        {
          metric_name: 'orders',
          shape: 'number',
          display_name: null,
          collected: true,
          definitions: [{ ...feeding, window_days: null }],
        },
        {
          metric_name: 'orders_30d',
          shape: 'number',
          display_name: 'Orders, 30 days',
          collected: true,
          definitions: [{ ...feeding, window_days: 30 }],
        },
      ]);
      await deleteMetric('metric_name=orders&event_name=order_completed');
      expect((await listed('eu')).map((metric) => [metric.metric_name, metric.collected])).toEqual([
        ['orders', false],
        ['orders_30d', true],
      ]);
      expect((await listed('us')).map((metric) => metric.metric_name)).toEqual(['orders_30d']);
    });

    it('stays unknown in a workspace where it left no values', async () => {
      await defineMetric(env, tokens.tenant, ORDERS);
      await send(order('ann@shop.test'));
      expect((await deleteMetric('metric_name=orders&event_name=order_completed')).statusCode).toBe(
        204,
      );
      const previewed = await preview(TWO_ORDERS, 'us');
      expect(previewed.statusCode).toBe(422);
      expect(previewed.json().error.message).toBe('predicate.metric: unknown metric orders');
      expect((await createSegment('buyers', TWO_ORDERS, 'us')).statusCode).toBe(422);
    });
  });

  describe('DELETE /event-types/{event_name}', () => {
    const path = '/v1/tenants/acme/event-types/order_completed';

    it('names the metric definitions that read it on a dry run, and refuses the delete while they do', async () => {
      await defineMetric(env, tokens.tenant, ORDERS);
      await defineMetric(env, tokens.tenant, {
        ...ORDERS,
        metric_name: 'us_orders',
        workspace_id: 'us',
      });
      const dry = await call(env.app, tokens.tenant, 'DELETE', `${path}?dry_run=true`);
      expect(dry.statusCode, dry.body).toBe(200);
      const dependents = [
        { metric_name: 'orders', workspace_id: '*' },
        { metric_name: 'us_orders', workspace_id: 'us' },
      ];
      expect(dry.json()).toEqual({ dry_run: true, metric_definitions: dependents });

      const refused = await call(env.app, tokens.tenant, 'DELETE', path);
      expect(refused.statusCode).toBe(409);
      expect(refused.json()).toEqual({
        error: {
          code: 'conflict',
          message:
            'event type order_completed is used by metric definitions (orders, us_orders); delete them first',
          details: { metric_definitions: dependents },
        },
      });

      await deleteMetric('metric_name=orders&event_name=order_completed');
      await deleteMetric('metric_name=us_orders&event_name=order_completed&workspace_id=us');
      const none = await call(env.app, tokens.tenant, 'DELETE', `${path}?dry_run=true`);
      expect(none.json()).toEqual({ dry_run: true, metric_definitions: [] });
      expect((await call(env.app, tokens.tenant, 'DELETE', path)).statusCode).toBe(204);
      expect(
        (await call(env.app, tokens.tenant, 'DELETE', `${path}?dry_run=true`)).statusCode,
      ).toBe(404);
    });
  });
});
