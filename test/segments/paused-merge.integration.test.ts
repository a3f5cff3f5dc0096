import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/database.js';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { defineMetric } from '../helpers/metrics.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const SEGMENTS = '/v1/tenants/acme/segments';

describe('a merge of members of a segment that is not evaluated', () => {
  let env: TestEnv;
  let tokens: Tokens;
  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    await defineMetric(env, tokens.tenant, {
      metric_name: 'orders',
      event_name: 'order_completed',
      value_kind: 'count',
    });
  });
  afterEach(() => env.close());

  let order = 0;
  const send = async (...specs: EventSpec[]) => {
    const response = await sendServer(
      env,
      tokens.collector,
      specs.map((spec) =>
        envelope({ name: 'order_completed', properties: { order_id: `o${++order}` }, ...spec }),
      ),
    );
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
  };
  const listed = async () => {
    const list = await call(env.app, tokens.tenant, 'GET', `${SEGMENTS}?workspace_id=eu`);
    const members = await call(
      env.app,
      tokens.tenant,
      'GET',
      `${SEGMENTS}/buyers/members?workspace_id=eu`,
    );
    return {
      count: (list.json() as { segments: { member_count: number }[] }).segments[0]?.member_count,
      members: (members.json() as { members: { profile_id: string }[] }).members.map(
        (m) => m.profile_id,
      ),
    };
  };

  for (const status of ['paused', 'draft', 'archived']) {
    it(`keeps member_count equal to the member list, the survivor a member (${status})`, async () => {
      await send(
        { identifiers: { email: 'a@acme.test' } },
        { identifiers: { email: 'b@acme.test' } },
      );
      const created = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/buyers`, {
        workspace_id: 'eu',
        display_name: 'buyers',
        predicate: { metric: 'orders', op: 'gte', value: 1 },
      });
      expect(created.statusCode, created.body).toBe(201);
      await env.ingest();
      expect((await listed()).count).toBe(2);
      const moved = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/buyers/status`, {
        workspace_id: 'eu',
        status,
      });
      expect(moved.statusCode, moved.body).toBe(200);

      await send({ identifiers: { email: 'a@acme.test', phone: '+919876543210' } });
      await send({ identifiers: { email: 'b@acme.test', phone: '+919876543210' } });
      const lookup = await call(
        env.app,
        tokens.tenant,
        'GET',
        '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=b@acme.test',
      );
      const survivor = (lookup.json() as { profile_id: string }).profile_id;
      expect(await listed()).toEqual({ count: 1, members: [survivor] });
    });
  }

  it('moves what an earlier merge left behind when the store is upgraded (migration 013)', async () => {
    await send(
      { identifiers: { email: 'a@acme.test' } },
      { identifiers: { email: 'b@acme.test' } },
    );
    await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/buyers`, {
      workspace_id: 'eu',
      display_name: 'buyers',
      predicate: { metric: 'orders', op: 'gte', value: 1 },
      status: 'paused',
    });
    await env.context.store.write((session) =>
      session.runText(`INSERT INTO segment_members
        SELECT tenant_id, workspace_id, 'buyers', profile_id, created_at FROM profiles`),
    );
    await send({ identifiers: { email: 'a@acme.test', phone: '+919876543210' } });
    await send({ identifiers: { email: 'b@acme.test', phone: '+919876543210' } });
    // As the last release left it: the merged-away profile still a member.
    await env.context.store.write(async (session) => {
      await session.runText(`INSERT INTO segment_members
        SELECT tenant_id, workspace_id, 'buyers', profile_id, created_at FROM profiles WHERE merged_into IS NOT NULL`);
      await session.runText('DELETE FROM schema_migrations WHERE version = 13');
    });
    expect((await listed()).count).toBe(2);
    const path = env.context.store.path;
    await env.context.store.close();
    env.context.store = await Store.open(path);
    expect(await listed()).toEqual({ count: 1, members: [expect.stringMatching(/^p_/)] });
  });
});
