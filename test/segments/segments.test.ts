import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { seedBareProfiles, seedProfiles } from '../helpers/profiles.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const BASE = '/v1/tenants/acme/segments';

async function seedCatalog(env: TestEnv, tokens: Tokens): Promise<void> {
  const put = (url: string, body: unknown) => call(env.app, tokens.tenant, 'PUT', url, body);
  await put('/v1/tenants/acme/event-types/order_completed', {});
  await put('/v1/tenants/acme/event-types/product_viewed', {});
  const metrics = [
    { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' },
    {
      metric_name: 'revenue',
      event_name: 'order_completed',
      value_kind: 'property_number',
      value_path: 'properties.total',
    },
    {
      metric_name: 'last_category',
      event_name: 'product_viewed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'latest',
    },
    {
      metric_name: 'recent_categories',
      event_name: 'product_viewed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'recent',
    },
    {
      metric_name: 'us_only',
      event_name: 'order_completed',
      value_kind: 'count',
      workspace_id: 'us',
    },
  ];
  for (const metric of metrics) {
    const response = await put('/v1/tenants/acme/metric-definitions', metric);
    expect(response.statusCode, response.body).toBe(201);
  }
}

describe('segments', () => {
  let env: TestEnv;
  let tokens: Tokens;

  // The catalog is made once, in the file's seeded template: each test starts from a copy.
  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ eventTypes: false, more: seedCatalog }));
  });
  afterEach(() => env.close());

  const create = (id: string, body: Record<string, unknown>) =>
    call(env.app, tokens.tenant, 'PUT', `${BASE}/${id}`, {
      workspace_id: 'eu',
      display_name: id,
      predicate: { metric: 'orders', op: 'gte', value: 1 },
      ...body,
    });
  const preview = (predicate: unknown, workspace = 'eu') =>
    call(env.app, tokens.tenant, 'POST', `${BASE}/preview`, { workspace_id: workspace, predicate });

  describe('PUT /segments/{segment_id}', () => {
    it('creates a segment with defaults and answers 201 with it', async () => {
      const response = await create('buyers', {});
      expect(response.statusCode).toBe(201);
      expect(response.json()).toEqual({
        segment_id: 'buyers',
        workspace_id: 'eu',
        display_name: 'buyers',
        predicate: { metric: 'orders', op: 'gte', value: 1 },
        status: 'active',
        automations: { on_enter: true, on_exit: true, on_backfill: false },
        created_at: '2026-03-01T12:00:00.000Z',
        updated_at: '2026-03-01T12:00:00.000Z',
        evaluation_error: null,
        evaluation_failed_at: null,
        required_consent: [],
      });
    });

    it('is create-only: the same id answers 409, another workspace may reuse it', async () => {
      await create('buyers', {});
      const again = await create('buyers', { display_name: 'changed' });
      expect(again.statusCode).toBe(409);
      expect(again.json().error.code).toBe('conflict');
      expect((await create('buyers', { workspace_id: 'us' })).statusCode).toBe(201);
    });

    it('keeps given status and automations', async () => {
      const response = await create('later', {
        status: 'draft',
        automations: { on_exit: false, on_backfill: true },
      });
      expect(response.json()).toMatchObject({
        status: 'draft',
        automations: { on_enter: true, on_exit: false, on_backfill: true },
      });
    });

    it.each([
      [
        'an unknown metric',
        { metric: 'lifetime_value', op: 'gte', value: 1 },
        'predicate.metric: unknown metric lifetime_value',
      ],
      [
        'a metric of another workspace',
        { metric: 'us_only', op: 'gte', value: 1 },
        'predicate.metric: unknown metric us_only',
      ],
      [
        'a string op on a number',
        { metric: 'orders', op: 'contains', value: 'x' },
        'predicate.op: operator contains does not apply to number metric orders; use one of eq, ne, gt, gte, lt, lte, exists',
      ],
      [
        'a number op on a string',
        { metric: 'last_category', op: 'gt', value: 1 },
        'predicate.op: operator gt does not apply to string metric last_category; use one of eq, ne, in, not_in, contains, exists',
      ],
      [
        'a string value for a number',
        { metric: 'orders', op: 'gte', value: '3' },
        'predicate.value: must be a number',
      ],
      [
        'a number value for a string',
        { metric: 'last_category', op: 'eq', value: 3 },
        'predicate.value: must be a string',
      ],
      [
        'a non-list for in',
        { metric: 'last_category', op: 'in', value: 'shoes' },
        'predicate.value: must be an array of strings',
      ],
      [
        'a non-boolean for exists',
        { metric: 'orders', op: 'exists', value: 1 },
        'predicate.value: must be a boolean',
      ],
      [
        'a nested fault',
        {
          all: [
            { metric: 'orders', op: 'gte', value: 1 },
            { any: [{ not: { metric: 'orders', op: 'between', value: 1 } }] },
          ],
        },
        'predicate.all[1].any[0].not.op: operator between does not apply to number metric orders; use one of eq, ne, gt, gte, lt, lte, exists',
      ],
      ['an empty all', { all: [] }, 'predicate.all: must be a non-empty array of predicates'],
      [
        'an extra key',
        { metric: 'orders', op: 'gte', value: 1, window: 3 },
        'predicate: unexpected key window; a predicate is {metric, op, value}, {event, op, value} or one of all, any, not',
      ],
      [
        'a missing op',
        { metric: 'orders', value: 1 },
        'predicate.op: Invalid input: expected string, received undefined',
      ],
    ])('refuses %s with 422 and the path of the fault', async (_case, predicate, message) => {
      const response = await create('bad', { predicate });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toBe(message);
      expect(
        (await call(env.app, tokens.tenant, 'GET', `${BASE}?workspace_id=eu`)).json().segments,
      ).toEqual([]);
    });

    it.each([
      ['2^63', 2 ** 63],
      ['1e308', 1e308],
      ['-2^63-1', -(2 ** 63) - 1],
      ['2^53', 2 ** 53],
    ])(
      'refuses the number %s on create and preview with 422 naming its path',
      async (_case, value) => {
        const predicate = {
          all: [
            { metric: 'orders', op: 'gte', value: 1 },
            { metric: 'revenue', op: 'lt', value },
          ],
        };
        const message =
          'predicate.all[1].value: must be between -9007199254740991 and 9007199254740991 (2^53 - 1), the range metric values hold exactly';
        for (const response of [await create('huge', { predicate }), await preview(predicate)]) {
          expect(response.statusCode, response.body).toBe(422);
          expect(response.json().error).toMatchObject({ code: 'validation_failed', message });
        }
      },
    );

    it('accepts the numbers at the ends of the range on create and preview', async () => {
      for (const [index, value] of [
        Number.MAX_SAFE_INTEGER,
        -Number.MAX_SAFE_INTEGER,
        0.5,
      ].entries()) {
        const predicate = { metric: 'orders', op: 'lte', value };
        expect((await preview(predicate)).statusCode).toBe(200);
        expect((await create(`edge-${index}`, { predicate })).statusCode).toBe(201);
      }
    });

    const comparisons = (count: number) => ({
      any: Array.from({ length: count }, (_, index) => ({
        metric: 'orders',
        op: 'eq',
        value: index,
      })),
    });

    it('accepts 100 comparisons and refuses the 101st with 422 naming it', async () => {
      expect((await create('wide', { predicate: comparisons(100) })).statusCode).toBe(201);
      for (const response of [
        await create('wider', { predicate: comparisons(101) }),
        await preview(comparisons(101)),
      ]) {
        expect(response.statusCode).toBe(422);
        expect(response.json().error.message).toBe(
          'predicate.any[100]: more than 100 comparisons in one predicate',
        );
      }
    });

    it('refuses 20,000 comparisons with 422 before looking at most of them', async () => {
      const response = await preview(comparisons(20_000));
      expect(response.statusCode).toBe(422);
      expect(response.json().error).toMatchObject({
        code: 'validation_failed',
        message: 'predicate.any[100]: more than 100 comparisons in one predicate',
        details: [{ path: 'predicate.any[100]' }],
      });
    });

    it('counts in and not_in list values across the predicate, 1,000 in all', async () => {
      const list = (from: number, count: number) =>
        Array.from({ length: count }, (_, index) => `c${from + index}`);
      const lists = (first: number, second: number) => ({
        all: [
          { metric: 'last_category', op: 'in', value: list(0, first) },
          { metric: 'recent_categories', op: 'not_in', value: list(first, second) },
        ],
      });
      expect((await create('listy', { predicate: lists(500, 500) })).statusCode).toBe(201);
      const over = await preview(lists(500, 501));
      expect(over.statusCode).toBe(422);
      expect(over.json().error.message).toBe(
        'predicate.all[1].value: more than 1000 list values in one predicate (all in and not_in lists together)',
      );
    });

    it('accepts nesting 8 deep and refuses 9', async () => {
      const nest = (depth: number): unknown =>
        depth === 1 ? { metric: 'orders', op: 'gte', value: 1 } : { not: nest(depth - 1) };
      expect((await create('deep8', { predicate: nest(8) })).statusCode).toBe(201);
      const nine = await create('deep9', { predicate: nest(9) });
      expect(nine.statusCode).toBe(422);
      expect(nine.json().error.message).toBe(
        `predicate${'.not'.repeat(8)}: nesting deeper than 8 levels`,
      );
    });

    it.each([
      ['workspace_id', { workspace_id: undefined }],
      ['display_name', { display_name: '' }],
      ['predicate', { predicate: 'orders > 1' }],
      ['status', { status: 'deleted' }],
      ['automations.on_enter', { automations: { on_enter: 'yes' } }],
    ])('refuses a bad %s with 422 naming it', async (field, body) => {
      const response = await create('bad', body);
      expect(response.statusCode).toBe(422);
      expect(
        response.json().error.message.startsWith(`${field}:`),
        response.json().error.message,
      ).toBe(true);
    });

    it('refuses an unknown workspace with 422', async () => {
      const response = await create('x', { workspace_id: 'apac' });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toBe('workspace_id: workspace apac does not exist');
    });

    it('refuses an id outside ^[a-z0-9][a-z0-9_-]{0,63}$', async () => {
      const response = await create('Big_Spenders', {});
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toMatch(/^segment_id:/);
    });
  });

  describe('GET /segments', () => {
    it('pages with limit and next_cursor, each item with member_count', async () => {
      for (const id of ['a', 'b', 'c', 'd', 'e']) await create(id, {});
      await create('z', { workspace_id: 'us' });
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const query: string = `workspace_id=eu&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
        const page = (await call(env.app, tokens.workspace, 'GET', `${BASE}?${query}`)).json();
        seen.push(...page.segments.map((segment: { segment_id: string }) => segment.segment_id));
        expect(
          page.segments.every((segment: { member_count: number }) => segment.member_count === 0),
        ).toBe(true);
        cursor = page.next_cursor;
        pages += 1;
      } while (cursor);
      expect(seen).toEqual(['a', 'b', 'c', 'd', 'e']);
      expect(pages).toBe(3);
    });

    it('lists every workspace for a tenant token and only its own for a workspace token', async () => {
      await create('a', {});
      await create('z', { workspace_id: 'us' });
      const all = (await call(env.app, tokens.tenant, 'GET', BASE)).json();
      expect(all.segments.map((s: { segment_id: string }) => s.segment_id)).toEqual(['a', 'z']);
      expect(all.next_cursor).toBeNull();
      const own = (await call(env.app, tokens.workspace, 'GET', BASE)).json();
      expect(own.segments.map((s: { segment_id: string }) => s.segment_id)).toEqual(['a']);
    });

    it.each([
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=not-a-cursor', 'cursor'],
    ])('refuses %s with 422 naming %s', async (query, field) => {
      const response = await call(
        env.app,
        tokens.tenant,
        'GET',
        `${BASE}?workspace_id=eu&${query}`,
      );
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message.startsWith(`${field}:`)).toBe(true);
    });

    it('answers 404 for an unknown workspace', async () => {
      expect(
        (await call(env.app, tokens.tenant, 'GET', `${BASE}?workspace_id=apac`)).statusCode,
      ).toBe(404);
    });
  });

  describe('definition, status and delete', () => {
    it('gets the definition in the shape of a list item without the count', async () => {
      const created = (await create('vip', {})).json();
      const got = await call(
        env.app,
        tokens.workspace,
        'GET',
        `${BASE}/vip/definition?workspace_id=eu`,
      );
      expect(got.statusCode).toBe(200);
      expect(got.json()).toEqual(created);
      expect(
        (await call(env.app, tokens.workspace, 'GET', `${BASE}/vip/definition`)).json(),
      ).toEqual(created);
    });

    it('answers 422 when a tenant token names no workspace, 404 for an unknown segment', async () => {
      expect(
        (await call(env.app, tokens.tenant, 'GET', `${BASE}/vip/definition`)).json().error.message,
      ).toBe('workspace_id: is required');
      expect(
        (await call(env.app, tokens.tenant, 'GET', `${BASE}/nope/definition?workspace_id=eu`))
          .statusCode,
      ).toBe(404);
    });

    it.each([
      ['active', 'paused'],
      ['paused', 'archived'],
      ['archived', 'draft'],
      ['draft', 'active'],
      ['active', 'archived'],
      ['archived', 'active'],
    ])('moves %s to %s', async (from, to) => {
      await create('vip', { status: from });
      env.clock.advance(1000);
      const response = await call(env.app, tokens.tenant, 'PUT', `${BASE}/vip/status`, {
        workspace_id: 'eu',
        status: to,
      });
      expect(response.statusCode).toBe(200);
      expect(response.json()).toMatchObject({ status: to, updated_at: '2026-03-01T12:00:01.000Z' });
    });

    it('refuses an unknown status with 422 and an unknown segment with 404', async () => {
      await create('vip', {});
      const bad = await call(env.app, tokens.tenant, 'PUT', `${BASE}/vip/status`, {
        workspace_id: 'eu',
        status: 'gone',
      });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().error.message).toMatch(/^status:/);
      const missing = await call(env.app, tokens.tenant, 'PUT', `${BASE}/nope/status`, {
        workspace_id: 'eu',
        status: 'paused',
      });
      expect(missing.statusCode).toBe(404);
    });

    it('deletes (204), then answers 404', async () => {
      await create('vip', {});
      expect(
        (await call(env.app, tokens.tenant, 'DELETE', `${BASE}/vip?workspace_id=eu`)).statusCode,
      ).toBe(204);
      expect(
        (await call(env.app, tokens.tenant, 'DELETE', `${BASE}/vip?workspace_id=eu`)).statusCode,
      ).toBe(404);
      expect(
        (await call(env.app, tokens.tenant, 'GET', `${BASE}/vip/definition?workspace_id=eu`))
          .statusCode,
      ).toBe(404);
    });
  });

  describe('POST /segments/preview', () => {
    beforeEach(async () => {
      await seedProfiles(env.context, 'acme', 'eu', {
        ann: {
          orders: 5,
          revenue: 700,
          last_category: 'shoes',
          recent_categories: ['shoes', 'bags'],
        },
        bob: { orders: 1, revenue: 40, last_category: 'bags', recent_categories: ['bags'] },
        cy: { last_category: 'hats', recent_categories: ['hats', 'shoes'] },
        dee: {},
      });
      await seedProfiles(env.context, 'acme', 'us', { eve: { orders: 9, revenue: 900 } });
    });

    it.each([
      ['orders gte 1', { metric: 'orders', op: 'gte', value: 1 }, 2],
      ['orders eq 0 (missing counts as 0)', { metric: 'orders', op: 'eq', value: 0 }, 2],
      ['orders lt 2', { metric: 'orders', op: 'lt', value: 2 }, 3],
      ['orders ne 5', { metric: 'orders', op: 'ne', value: 5 }, 3],
      ['revenue gt 100', { metric: 'revenue', op: 'gt', value: 100 }, 1],
      ['revenue lte 40', { metric: 'revenue', op: 'lte', value: 40 }, 3],
      ['revenue exists', { metric: 'revenue', op: 'exists', value: true }, 2],
      ['revenue does not exist', { metric: 'revenue', op: 'exists', value: false }, 2],
      ['last_category eq shoes', { metric: 'last_category', op: 'eq', value: 'shoes' }, 1],
      ['last_category ne shoes', { metric: 'last_category', op: 'ne', value: 'shoes' }, 3],
      ['last_category in', { metric: 'last_category', op: 'in', value: ['bags', 'hats'] }, 2],
      [
        'last_category not_in',
        { metric: 'last_category', op: 'not_in', value: ['bags', 'hats'] },
        2,
      ],
      ['last_category contains "ag"', { metric: 'last_category', op: 'contains', value: 'ag' }, 1],
      ['recent contains shoes', { metric: 'recent_categories', op: 'contains', value: 'shoes' }, 2],
      ['recent eq (newest) hats', { metric: 'recent_categories', op: 'eq', value: 'hats' }, 1],
      ['recent in', { metric: 'recent_categories', op: 'in', value: ['bags', 'socks'] }, 2],
      ['recent not_in', { metric: 'recent_categories', op: 'not_in', value: ['bags'] }, 2],
      [
        'all',
        {
          all: [
            { metric: 'orders', op: 'gte', value: 1 },
            { metric: 'revenue', op: 'gt', value: 100 },
          ],
        },
        1,
      ],
      [
        'any',
        {
          any: [
            { metric: 'revenue', op: 'gt', value: 100 },
            { metric: 'last_category', op: 'eq', value: 'hats' },
          ],
        },
        2,
      ],
      ['not', { not: { metric: 'recent_categories', op: 'contains', value: 'shoes' } }, 2],
      [
        'not of a missing string',
        { not: { metric: 'last_category', op: 'eq', value: 'shoes' } },
        3,
      ],
    ])('counts %s', async (_case, predicate, matched) => {
      const response = await preview(predicate);
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json()).toEqual({
        workspace_id: 'eu',
        matched_profiles: matched,
        scanned_profiles: 4,
        truncated: false,
        workspace_profiles: 4,
        workspace_identified_profiles: 0,
      });
    });

    it('treats a bound value as data, never as SQL', async () => {
      const response = await preview({
        metric: 'last_category',
        op: 'eq',
        value: "shoes' OR 1=1 --",
      });
      expect(response.json().matched_profiles).toBe(0);
    });

    it('validates the predicate like create does', async () => {
      const response = await preview({ metric: 'orders', op: 'gte', value: 'many' });
      expect(response.statusCode).toBe(422);
      expect(response.json().error.message).toBe('predicate.value: must be a number');
    });

    it('scans at most 20,000 profiles and says truncated; workspace totals stay exact', async () => {
      await seedBareProfiles(env.context, 'acme', 'eu', 20_010);
      const response = await preview({ metric: 'orders', op: 'eq', value: 0 });
      expect(response.json()).toMatchObject({
        scanned_profiles: 20_000,
        truncated: true,
        workspace_profiles: 20_014,
      });
      expect(response.json().matched_profiles).toBeGreaterThanOrEqual(19_998);
    });
  });
});
