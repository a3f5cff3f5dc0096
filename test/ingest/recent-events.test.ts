import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { RECENT_EVENTS_WINDOW_MS } from '../../src/ingest/recent-events.js';
import { runUpkeep } from '../../src/ingest/upkeep.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

let env: TestEnv;
let tokens: Tokens;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv({ collector: true }));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await env.close();
});

const listedIds = async () =>
  (await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/workspaces/eu/events'))
    .json()
    .items.map((item: { event_id: string }) => item.event_id);

describe('recent_events upkeep', () => {
  it('keeps the lines of the last day only', async () => {
    const old = envelope({ identifiers: { email: 'old@example.com' } });
    await sendServer(env, tokens.collector, [old]);
    await env.ingest();
    env.clock.advance(RECENT_EVENTS_WINDOW_MS - 60_000);
    const fresh = envelope({ identifiers: { email: 'fresh@example.com' } });
    await sendServer(env, tokens.collector, [fresh]);
    await env.ingest();
    await runUpkeep(env.context);
    expect(await listedIds()).toEqual([fresh.id, old.id]);

    env.clock.advance(120_000);
    await runUpkeep(env.context);
    expect(await listedIds()).toEqual([fresh.id]);
  });

  it('is kept by the loop once a second between batches, and on every pass without one', async () => {
    // The loop's elapsed time stands still: every batch comes within MAINTENANCE_EVERY_MS.
    vi.spyOn(performance, 'now').mockReturnValue(1_000_000);
    const old = envelope({ identifiers: { email: 'old@example.com' } });
    await sendServer(env, tokens.collector, [old]);
    await env.ingest();
    env.clock.advance(RECENT_EVENTS_WINDOW_MS + 60_000);
    const fresh = envelope({ identifiers: { email: 'fresh@example.com' } });
    await sendServer(env, tokens.collector, [fresh]);
    await env.ingest();
    expect(await listedIds()).toEqual([fresh.id, old.id]);
    // Nothing sealed: the pass is the loop's upkeep alone, maintenance included.
    await env.ingest();
    expect(await listedIds()).toEqual([fresh.id]);
  });
});
