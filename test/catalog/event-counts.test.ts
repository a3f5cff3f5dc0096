import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const URL = '/v1/tenants/acme/event-type-counts';
const DAY_MS = 24 * 60 * 60 * 1000;

describe('GET /v1/tenants/:tenant/event-type-counts', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  async function send(name: string, workspace: string) {
    const sent = await sendServer(env, tokens.collector, [
      envelope({ name, workspace, anon: 'visitor-1' }),
    ]);
    expect(sent.statusCode).toBeLessThan(300);
    await env.ingest();
  }

  it('counts stored events by name over 24 hours and 7 days, per workspace or for the tenant', async () => {
    await send('page_viewed', 'eu');
    env.clock.advance(3 * DAY_MS);
    await send('page_viewed', 'eu');
    await send('signed_up', 'eu');
    await send('page_viewed', 'us');

    const eu = await call(env.app, tokens.tenant, 'GET', `${URL}?workspace_id=eu`);
    expect(eu.statusCode).toBe(200);
    expect(eu.json()).toEqual({
      counts: [
        { event_name: 'page_viewed', last_24h: 1, last_7d: 2 },
        { event_name: 'signed_up', last_24h: 1, last_7d: 1 },
      ],
    });
    const tenant = await call(env.app, tokens.tenant, 'GET', URL);
    expect(tenant.json().counts[0]).toEqual({ event_name: 'page_viewed', last_24h: 2, last_7d: 3 });
    // A workspace token that names no workspace reads its own.
    const own = await call(env.app, tokens.workspace, 'GET', URL);
    expect(own.json()).toEqual(eu.json());

    env.clock.advance(8 * DAY_MS);
    expect((await call(env.app, tokens.tenant, 'GET', URL)).json()).toEqual({ counts: [] });
  });

  it('refuses a workspace token asking for another workspace', async () => {
    const other = await call(env.app, tokens.workspace, 'GET', `${URL}?workspace_id=us`);
    expect(other.statusCode).toBe(403);
  });
});
