import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { defineMetric } from '../helpers/metrics.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const SUMMARY = '/v1/tenants/acme/workspaces/eu/profiles/summary';

interface Row {
  profile_id: string;
  email: string | null;
  metrics: Record<string, unknown>;
}

describe('the customer table sorted by a metric (issue 38, item 3)', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    await defineMetric(env, tokens.tenant, {
      metric_name: 'spent',
      event_name: 'order_completed',
      value_kind: 'property_number',
      value_path: 'properties.total',
    });
    await defineMetric(env, tokens.tenant, {
      metric_name: 'last_category',
      event_name: 'product_viewed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'latest',
    });
    // Customers c0…c11 spend 0, 10, 10, 30, …: ties, and three who never ordered.
    const events = [];
    let order = 0;
    for (let customer = 0; customer < 12; customer += 1) {
      const email = `c${customer}@shop.test`;
      events.push(envelope({ name: 'page_viewed', identifiers: { email } }));
      if (customer >= 9) continue;
      const total = customer === 2 ? 10 : customer * 10;
      events.push(
        envelope({
          name: 'order_completed',
          identifiers: { email },
          properties: { order_id: `o${++order}`, total },
        }),
      );
    }
    const sent = await sendServer(env, tokens.collector, events);
    expect(sent.statusCode, sent.body).toBe(202);
    await env.ingest();
  });
  afterEach(async () => {
    await env.close();
  });

  /** Every page of the table in its order, `limit` rows a page. */
  const everyRow = async (query: string, limit = 5) => {
    const rows: Row[] = [];
    let cursor: string | null = null;
    do {
      const page = await call(
        env.app,
        tokens.workspace,
        'GET',
        `${SUMMARY}?${query}&limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(page.statusCode, page.body).toBe(200);
      rows.push(...page.json().profiles);
      cursor = page.json().next_cursor;
    } while (cursor);
    return rows;
  };

  it('pages through highest first and lowest first, ties by profile id, those without the metric last', async () => {
    const all = await everyRow('order=desc');
    expect(all).toHaveLength(12);
    const spent = (row: Row) => row.metrics.spent as number | undefined;
    const expectedOrder = (descending: boolean) =>
      [...all]
        .sort((a, b) => {
          const [x, y] = [spent(a), spent(b)];
          if (x === undefined || y === undefined)
            return x === y ? a.profile_id.localeCompare(b.profile_id) : x === undefined ? 1 : -1;
          return (descending ? y - x : x - y) || a.profile_id.localeCompare(b.profile_id);
        })
        .map((row) => row.email);
    for (const limit of [1, 4, 5, 50]) {
      const highest = await everyRow('sort_by=spent&order=desc', limit);
      expect(
        highest.map((row) => row.email),
        `desc, ${limit} a page`,
      ).toEqual(expectedOrder(true));
      expect(highest[0]?.email).toBe('c8@shop.test');
      const lowest = await everyRow('sort_by=spent&order=asc', limit);
      expect(
        lowest.map((row) => row.email),
        `asc, ${limit} a page`,
      ).toEqual(expectedOrder(false));
      expect(lowest.slice(-3).map(spent)).toEqual([undefined, undefined, undefined]);
    }
  });

  it('sorts a segment filter the same way', async () => {
    const segment = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/segments/spenders',
      {
        workspace_id: 'eu',
        display_name: 'Spenders',
        predicate: { metric: 'spent', op: 'gte', value: 40 },
      },
    );
    expect(segment.statusCode, segment.body).toBe(201);
    await env.ingest();
    const rows = await everyRow('segment_id=spenders&sort_by=spent&order=asc', 2);
    expect(rows.map((row) => row.metrics.spent)).toEqual([40, 50, 60, 70, 80]);
  });

  it('refuses a metric that is not a count or a sum, an unknown one and an unknown order with 422', async () => {
    for (const [query, path] of [
      ['sort_by=last_category', 'sort_by'],
      ['sort_by=nothing_here', 'sort_by'],
      ['sort_by=spent&order=sideways', 'order'],
    ] as const) {
      const answer = await call(env.app, tokens.workspace, 'GET', `${SUMMARY}?${query}`);
      expect(answer.statusCode, query).toBe(422);
      expect(answer.json().error.details.map((d: { path: string }) => d.path)).toEqual([path]);
    }
  });
});
