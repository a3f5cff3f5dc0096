import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compactNextPart } from '../../src/metrics/compaction.js';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { defineMetric } from '../helpers/metrics.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const DAY = 24 * 60 * 60 * 1000;
const ORDERS = { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' };
const REVENUE = {
  metric_name: 'revenue',
  event_name: 'order_completed',
  value_kind: 'property_number',
  value_path: 'properties.total',
};

describe('metric values', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  const define = (definition: Record<string, unknown>) =>
    defineMetric(env, tokens.tenant, definition);
  const undefine = async (query: string) => {
    const response = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `/v1/tenants/acme/metric-definitions?${query}`,
    );
    expect(response.statusCode, response.body).toBe(204);
  };
  const send = async (...specs: EventSpec[]) => {
    const response = await sendServer(env, tokens.collector, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json().rejected).toEqual([]);
  };
  const metricsOf = async (email: string, workspace = 'eu') => {
    const base = `/v1/tenants/acme/workspaces/${workspace}/profiles`;
    const found = await call(env.app, tokens.tenant, 'GET', `${base}/lookup?email=${email}`);
    expect(found.statusCode, found.body).toBe(200);
    const view = await call(env.app, tokens.tenant, 'GET', `${base}/${found.json().profile_id}`);
    return view.json().metrics as Record<string, unknown>;
  };
  const ann = { email: 'ann@shop.test' };
  const order = (id: string, at: string, total: unknown, extra: Record<string, unknown> = {}) => ({
    name: 'order_completed',
    at,
    identifiers: ann,
    properties: { order_id: id, total, ...extra },
  });

  it('counts events and sums numbers, ignoring values that are not numbers', async () => {
    await define(ORDERS);
    await define(REVENUE);
    await send(
      order('o1', '2026-02-01T10:00:00Z', 40),
      order('o2', '2026-02-02T10:00:00Z', 2.5),
      order('o3', '2026-02-03T10:00:00Z', '100'),
      order('o4', '2026-02-04T10:00:00Z', null),
    );
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders: 4, revenue: 42.5 });
    await send(order('o5', '2026-02-05T10:00:00Z', 7.5), order('o1', '2026-02-05T10:00:00Z', 999));
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders: 5, revenue: 50 });
  });

  it('recomputes a profile only when an event some definition reads arrives for it', async () => {
    await define(ORDERS);
    const computedAt = async () =>
      (
        await env.context.store.read((s) =>
          s.allText<{ at: string }>('SELECT max(updated_at) AS at FROM profile_metrics'),
        )
      )[0]?.at;
    await send(order('o1', '2026-02-01T10:00:00Z', 40));
    await env.ingest();
    const first = await computedAt();
    env.clock.advance(DAY);
    await send({ name: 'page_viewed', at: '2026-02-02T10:00:00Z', identifiers: ann });
    await env.ingest();
    expect(await computedAt()).toBe(first);
    expect(await metricsOf('ann@shop.test')).toEqual({ orders: 1 });
    await send(order('o2', '2026-02-03T10:00:00Z', 5));
    await env.ingest();
    expect(await computedAt()).not.toBe(first);
    expect(await metricsOf('ann@shop.test')).toEqual({ orders: 2 });
  });

  it('keeps windowed values in daily buckets that decay as days pass without events', async () => {
    await define({
      metric_name: 'orders_7d',
      event_name: 'order_completed',
      value_kind: 'count',
      window_days: 7,
    });
    await define({
      metric_name: 'revenue_7d',
      event_name: 'order_completed',
      value_kind: 'property_number',
      value_path: 'properties.total',
      window_days: 7,
    });
    // The clock reads 2026-03-01 12:00; a 7-day window holds 2026-02-23 to 2026-03-01.
    await send(
      order('old', '2026-02-22T23:59:59Z', 1000),
      order('edge', '2026-02-23T00:00:00Z', 10),
      order('today', '2026-03-01T08:00:00Z', 5),
    );
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders_7d: 2, revenue_7d: 15 });
    env.clock.advance(DAY);
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders_7d: 1, revenue_7d: 5 });
    env.clock.advance(6 * DAY);
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders_7d: 0, revenue_7d: 0 });
  });

  it('keeps the newest string by occured_at, so a late event does not overwrite a newer one', async () => {
    await define({
      metric_name: 'last_category',
      event_name: 'product_viewed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'latest',
    });
    const view = (at: string, category: unknown) => ({
      name: 'product_viewed',
      at,
      identifiers: ann,
      properties: { category },
    });
    await send(view('2026-02-10T10:00:00Z', 'shoes'));
    await env.ingest();
    await send(view('2026-02-01T10:00:00Z', 'bags'), view('2026-02-20T10:00:00Z', 42));
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ last_category: 'shoes' });
    await send(view('2026-02-11T10:00:00Z', 'hats'));
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ last_category: 'hats' });
  });

  it('keeps the last distinct values, newest first, up to keep', async () => {
    await define({
      metric_name: 'recent_categories',
      event_name: 'product_viewed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'recent',
      keep: 3,
    });
    const view = (day: number, category: string) => ({
      name: 'product_viewed',
      at: `2026-02-${String(day).padStart(2, '0')}T10:00:00Z`,
      identifiers: ann,
      properties: { category },
    });
    await send(view(1, 'shoes'), view(2, 'bags'), view(3, 'shoes'));
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ recent_categories: ['shoes', 'bags'] });
    await send(view(5, 'hats'), view(4, 'belts'), view(6, 'socks'));
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({
      recent_categories: ['socks', 'hats', 'belts'],
    });
  });

  it('combines definitions that share a metric name', async () => {
    for (const event_name of ['page_viewed', 'product_viewed']) {
      await define({ metric_name: 'engagement', event_name, value_kind: 'count' });
      await define({
        metric_name: 'last_seen_page',
        event_name,
        value_kind: 'property_string',
        value_path: 'properties.page',
        aggregation: 'latest',
      });
    }
    await send(
      {
        name: 'page_viewed',
        identifiers: ann,
        at: '2026-02-01T00:00:00Z',
        properties: { page: '/a' },
      },
      {
        name: 'page_viewed',
        identifiers: ann,
        at: '2026-02-03T00:00:00Z',
        properties: { page: '/b' },
      },
      {
        name: 'product_viewed',
        identifiers: ann,
        at: '2026-02-02T00:00:00Z',
        properties: { page: '/p' },
      },
      { name: 'signed_up', identifiers: ann },
    );
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ engagement: 3, last_seen_page: '/b' });
  });

  it('applies a definition for every workspace or for one', async () => {
    await define({ metric_name: 'visits', event_name: 'page_viewed', value_kind: 'count' });
    await define({
      metric_name: 'eu_visits',
      event_name: 'page_viewed',
      value_kind: 'count',
      workspace_id: 'eu',
    });
    await send({ identifiers: ann }, { identifiers: ann, workspace: 'us' });
    await env.ingest();
    expect(await metricsOf('ann@shop.test', 'eu')).toEqual({ visits: 1, eu_visits: 1 });
    expect(await metricsOf('ann@shop.test', 'us')).toEqual({ visits: 1 });
  });

  it('backfills a new definition from the events already stored', async () => {
    await send(
      order('o1', '2026-02-01T10:00:00Z', 10),
      order('o2', '2026-02-27T10:00:00Z', 20),
      order('o3', '2026-02-28T10:00:00Z', 30),
    );
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({});
    await define(ORDERS);
    await define({
      metric_name: 'revenue_7d',
      event_name: 'order_completed',
      value_kind: 'property_number',
      value_path: 'properties.total',
      window_days: 7,
    });
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders: 3, revenue_7d: 50 });
    await send(order('o4', '2026-03-01T10:00:00Z', 5));
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders: 4, revenue_7d: 55 });
  });

  it('keeps the last value of a deleted definition, a windowed one frozen at deletion', async () => {
    await define({
      metric_name: 'orders_7d',
      event_name: 'order_completed',
      value_kind: 'count',
      window_days: 7,
    });
    await define({
      metric_name: 'last_total_kind',
      event_name: 'order_completed',
      value_kind: 'property_string',
      value_path: 'properties.kind',
      aggregation: 'latest',
    });
    await send(
      order('o1', '2026-02-27T10:00:00Z', 1, { kind: 'gift' }),
      order('o2', '2026-02-28T10:00:00Z', 1, { kind: 'self' }),
    );
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders_7d: 2, last_total_kind: 'self' });
    await undefine('metric_name=orders_7d&event_name=order_completed');
    await undefine('metric_name=last_total_kind&event_name=order_completed');
    env.clock.advance(30 * DAY);
    await send(order('o3', '2026-03-31T10:00:00Z', 1, { kind: 'gift' }));
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ orders_7d: 2, last_total_kind: 'self' });
  });

  it('recomputes the survivor of a merge from both profiles', async () => {
    await define(ORDERS);
    await define({
      metric_name: 'recent_categories',
      event_name: 'order_completed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'recent',
      keep: 2,
    });
    const bob = { phone: '9876543210' };
    await send(
      order('o1', '2026-02-01T10:00:00Z', 1, { category: 'shoes' }),
      order('o2', '2026-02-04T10:00:00Z', 1, { category: 'bags' }),
      {
        name: 'order_completed',
        at: '2026-02-03T10:00:00Z',
        identifiers: bob,
        properties: { order_id: 'o3', category: 'hats' },
      },
    );
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({
      orders: 2,
      recent_categories: ['bags', 'shoes'],
    });
    await send({ name: 'signed_up', identifiers: { ...ann, ...bob } });
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({
      orders: 3,
      recent_categories: ['bags', 'hats'],
    });
    const rows = await env.context.store.read((session) =>
      session.allText<{ n: number }>(
        'SELECT count(*) AS n FROM profile_metrics m JOIN profiles p USING (tenant_id, workspace_id, profile_id) WHERE p.merged_into IS NOT NULL',
      ),
    );
    expect(rows[0]?.n).toBe(0);
  });

  it('keeps one row of values for each live profile, none for a profile merged away', async () => {
    await define(ORDERS);
    const bob = { phone: '9876543210' };
    const cara = { email: 'cara@shop.test' };
    const dev = { phone: '9123456780' };
    await send(order('o1', '2026-02-01T10:00:00Z', 1, {}), {
      name: 'order_completed',
      at: '2026-02-02T10:00:00Z',
      identifiers: bob,
      properties: { order_id: 'o2' },
    });
    await env.ingest();
    // Two profiles created and merged in one batch, and two of an earlier batch merged.
    await send(
      { name: 'order_completed', identifiers: cara, properties: { order_id: 'o3' } },
      { name: 'order_completed', identifiers: dev, properties: { order_id: 'o4' } },
      { name: 'signed_up', identifiers: { ...cara, ...dev } },
      { name: 'signed_up', identifiers: { ...ann, ...bob } },
    );
    await env.ingest();
    const rows = await env.context.store.read((session) =>
      session.allText<{ live: number; vectors: number; of_merged: number }>(
        `SELECT
           (SELECT count(*) FROM profiles WHERE merged_into IS NULL) AS live,
           (SELECT count(*) FROM profile_metric_vectors) AS vectors,
           (SELECT count(*) FROM profile_metric_vectors v JOIN profiles p USING (tenant_id, workspace_id, profile_id)
            WHERE p.merged_into IS NOT NULL) AS of_merged`,
      ),
    );
    expect(rows[0]).toEqual({ live: 2, vectors: 2, of_merged: 0 });
    expect(await metricsOf('cara@shop.test')).toEqual({ orders: 2 });
    expect(await metricsOf('ann@shop.test')).toEqual({ orders: 2 });
  });

  it('advances values batch by batch to what a recompute from the inputs gives, and compacting the inputs changes none', async () => {
    await define(ORDERS);
    await define(REVENUE);
    await define({
      metric_name: 'orders_7d',
      event_name: 'order_completed',
      value_kind: 'count',
      window_days: 7,
    });
    await define({
      metric_name: 'recent_categories',
      event_name: 'order_completed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'recent',
      keep: 2,
    });
    await define({
      metric_name: 'last_category',
      event_name: 'order_completed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'latest',
    });
    const bob = { phone: '9876543210' };
    const bobOrder = (id: string, at: string, total: number, category: string) => ({
      name: 'order_completed',
      at,
      identifiers: bob,
      properties: { order_id: id, total, category },
    });
    // Today is 2026-03-01: o1 is outside the 7-day window, late o6 is older than what is stored.
    await send(order('o1', '2026-02-01T10:00:00Z', 10, { category: 'shoes' }));
    await env.ingest();
    await send(
      order('o2', '2026-02-27T10:00:00Z', 5, { category: 'bags' }),
      bobOrder('o3', '2026-02-28T10:00:00Z', 7, 'hats'),
    );
    await env.ingest();
    await send(bobOrder('o4', '2026-02-28T11:00:00Z', 1, 'bags'));
    await env.ingest();
    await send({ name: 'signed_up', identifiers: { ...ann, ...bob } });
    await env.ingest();
    await send(
      order('o5', '2026-02-28T12:00:00Z', 2, { category: 'socks' }),
      order('o6', '2026-02-02T10:00:00Z', 3, { category: 'belts' }),
    );
    await env.ingest();
    const advanced = {
      orders: 6,
      revenue: 28,
      orders_7d: 4,
      recent_categories: ['socks', 'bags'],
      last_category: 'socks',
    };
    expect(await metricsOf('ann@shop.test')).toEqual(advanced);

    const inputs = () =>
      env.context.store.read((session) =>
        session.allText<{ rows: number; keys: number; under_merged: number }>(
          `SELECT count(*) AS rows,
             count(DISTINCT (profile_id, metric_name, contributor, day)) AS keys,
             count(*) FILTER (WHERE profile_id IN (SELECT profile_id FROM profiles WHERE merged_into IS NOT NULL)) AS under_merged
           FROM metric_contributions`,
        ),
      );
    // Each batch appended its own rows, the merged profile's stay under its id until compacted.
    expect((await inputs())[0]?.under_merged).toBeGreaterThan(0);

    // A new definition is backfilled, which recomputes the profile from every stored input, those
    // under the merged profile's id included.
    await define({ metric_name: 'orders_any', event_name: 'order_completed', value_kind: 'count' });
    await env.ingest();
    expect(await metricsOf('ann@shop.test')).toEqual({ ...advanced, orders_any: 6 });

    // In runs of a few rows, as a large store's compaction goes: every input goes to its
    // survivor; a profile keeps a row a key in each run it had rows in, until a compaction whose
    // run holds them all.
    const compact = async (rowsAPart: number) => {
      while (!(await compactNextPart(env.context.store, rowsAPart))) {
        expect(await metricsOf('ann@shop.test')).toEqual({ ...advanced, orders_any: 6 });
      }
    };
    await compact(4);
    expect((await inputs())[0]?.under_merged).toBe(0);
    expect(await metricsOf('ann@shop.test')).toEqual({ ...advanced, orders_any: 6 });
    await compact(1_000);
    const compacted = (await inputs())[0];
    expect(compacted).toEqual({ rows: compacted?.keys, keys: compacted?.keys, under_merged: 0 });
  });
});
