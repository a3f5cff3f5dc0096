import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PREVIEW_SCAN_LIMIT } from '../../src/segments/preview.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const SEGMENTS = '/v1/tenants/acme/segments';
const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';
/** More customers than a preview scans (by more than a quarter: ids are then bounded before sorting). */
const CUSTOMERS = 27_000;
/** Every sixth customer ordered twice; the others ordered once. */
const REPEAT_EVERY = 6;
const RULE = { event: 'order_completed', op: 'gte', value: 2, within_days: 30 };

describe('a preview of a workspace larger than it scans (issue 38)', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeAll(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    let order = 0;
    const events: Record<string, unknown>[] = [];
    for (let customer = 0; customer < CUSTOMERS; customer++) {
      const orders = customer % REPEAT_EVERY === 0 ? 2 : 1;
      for (let n = 0; n < orders; n++) {
        events.push(
          envelope({
            name: 'order_completed',
            at: '2026-02-20T10:00:00.000Z',
            identifiers: { email: `c${customer}@shop.test` },
            properties: { order_id: `o${++order}`, total: 20 },
          }),
        );
      }
    }
    for (let start = 0; start < events.length; start += 1000) {
      const response = await sendServer(env, tokens.collector, events.slice(start, start + 1000));
      expect(response.statusCode, response.body).toBe(202);
    }
    await env.ingest();
  }, 120_000);
  afterAll(async () => {
    await env.close();
  });

  /** Every page of a listing, through the API. */
  const everyRow = async <Row>(path: string, field: string): Promise<Row[]> => {
    const rows: Row[] = [];
    let cursor: string | null = null;
    do {
      const after: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const response = await call(env.app, tokens.tenant, 'GET', `${path}&limit=500${after}`);
      expect(response.statusCode, response.body).toBe(200);
      const body = response.json();
      rows.push(...(body[field] as Row[]));
      cursor = body.next_cursor;
    } while (cursor);
    return rows;
  };
  const preview = async () => {
    const response = await call(env.app, tokens.tenant, 'POST', `${SEGMENTS}/preview`, {
      workspace_id: 'eu',
      predicate: RULE,
      sample_size: 25,
    });
    expect(response.statusCode, response.body).toBe(200);
    return response.json();
  };

  it('counts the profiles with the lowest ids, the same whether a behaviour is read from the events or from its metric', async () => {
    const fromEvents = await preview();
    const created = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/repeat-buyers`, {
      workspace_id: 'eu',
      display_name: 'Repeat buyers',
      predicate: RULE,
    });
    expect(created.statusCode, created.body).toBe(201);
    await env.ingest();
    const fromMetric = await preview();

    const members = await everyRow<{ profile_id: string }>(
      `${SEGMENTS}/repeat-buyers/members?workspace_id=eu`,
      'members',
    );
    expect(members).toHaveLength(CUSTOMERS / REPEAT_EVERY);
    const everyone = await everyRow<{ profile_id: string }>(`${PROFILES}/summary?x=1`, 'profiles');
    expect(everyone).toHaveLength(CUSTOMERS);
    const scanned = everyone
      .map((row) => row.profile_id)
      .sort()
      .slice(0, PREVIEW_SCAN_LIMIT);
    const memberIds = new Set(members.map((row) => row.profile_id));
    const matchedInScan = scanned.filter((id) => memberIds.has(id));

    for (const [stage, answer] of [
      ['before the segment', fromEvents],
      ['once the segment exists', fromMetric],
    ] as const) {
      expect(answer, stage).toMatchObject({
        matched_profiles: matchedInScan.length,
        scanned_profiles: PREVIEW_SCAN_LIMIT,
        truncated: true,
        workspace_profiles: CUSTOMERS,
      });
      expect(
        answer.sample.map((row: { profile_id: string }) => row.profile_id),
        stage,
      ).toEqual(matchedInScan.slice(0, 25));
    }
    // Hashed ids make the scanned profiles a fair sample: its share is the workspace's.
    expect(matchedInScan.length / PREVIEW_SCAN_LIMIT).toBeCloseTo(1 / REPEAT_EVERY, 2);
  }, 120_000);
});
