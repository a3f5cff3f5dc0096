import { describe, expect, it } from 'vitest';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { envelope, registerEventTypes, sendBrowser } from '../helpers/events.js';
import { call, seedTenants } from '../helpers/tenant.js';

type Row = { profile_id: string; metrics: { views?: number } };

/**
 * Tenant acme with cookies limited to one a profile and a `views` count; answers the views of
 * every profile of workspace eu after the events were sent in the given cuts, each cut one
 * collector request and one ingest batch.
 */
async function viewsAfter(cuts: Record<string, unknown>[][]): Promise<number[]> {
  const env: TestEnv = await openTestEnv({ collector: true });
  try {
    const tokens = await seedTenants(env.context);
    await registerEventTypes(env, tokens.tenant);
    const cookie = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/identifier-types/cookie',
      {
        tier: 'weak',
        max_per_profile: 1,
      },
    );
    expect(cookie.statusCode, cookie.body).toBeLessThan(300);
    const metric = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/metric-definitions',
      {
        metric_name: 'views',
        event_name: 'page_viewed',
        value_kind: 'count',
      },
    );
    expect(metric.statusCode, metric.body).toBe(201);
    for (const cut of cuts) {
      expect((await sendBrowser(env, cut)).statusCode).toBe(202);
      await env.ingest();
    }
    const summary = await call(
      env.app,
      tokens.tenant,
      'GET',
      '/v1/tenants/acme/workspaces/eu/profiles/summary',
    );
    return (
      (summary.json() as { rows?: Row[]; profiles?: Row[] }).profiles
        ?.map((row) => row.metrics.views ?? 0)
        .sort() ?? []
    );
  } finally {
    await env.close();
  }
}

const visit = (id: string, cookie: string, device?: string) =>
  envelope({ id, anon: cookie, ...(device ? { identifiers: { device_id: device } } : {}) });

describe('identity does not depend on how browser events are cut into batches', () => {
  it('resolves a repeat of an identifier set after its refused cookie started a profile of its own', async () => {
    const events = [
      visit('e1', 'c1', 'd1'),
      visit('e2', 'c2', 'd1'),
      visit('e3', 'c2'),
      visit('e4', 'c2', 'd1'),
    ];
    const oneByOne = await viewsAfter(events.map((event) => [event]));
    expect(oneByOne).toEqual([2, 2]);
    expect(await viewsAfter([events])).toEqual(oneByOne);
    expect(await viewsAfter([events.slice(0, 3), events.slice(3)])).toEqual(oneByOne);
  });
});
