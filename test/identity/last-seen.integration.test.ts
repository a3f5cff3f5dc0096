import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { foldLastSeen } from '../../src/identity/last-seen.js';
import { writeSnapshot } from '../../src/store/snapshot.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';

/**
 * A profile's last seen is appended by each batch and folded into profiles now and then
 * (docs/decisions.md, "Last seen, appended"): every reader answers the greatest, before and
 * after a fold, through merges and erasures.
 */
describe('last seen', () => {
  let env: TestEnv;
  let tokens: Tokens;
  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  const visit = (cookie: string, email: string, at: string) =>
    envelope({ anon: cookie, identifiers: { email }, at });
  const ingest = async (...events: Record<string, unknown>[]) => {
    const sent = await sendServer(env, tokens.collector, events);
    expect(sent.statusCode, sent.body).toBe(202);
    await env.ingest();
  };
  const profileOf = async (email: string) => {
    const found = await call(
      env.app,
      tokens.tenant,
      'GET',
      `${PROFILES}/lookup?email=${encodeURIComponent(email)}`,
    );
    expect(found.statusCode, found.body).toBe(200);
    const profileId = found.json().profile_id as string;
    const view = await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${profileId}`);
    expect(view.statusCode, view.body).toBe(200);
    return { profile_id: profileId, last_seen_at: view.json().last_seen_at as string };
  };
  const customerTable = async () => {
    const page = await call(env.app, tokens.tenant, 'GET', `${PROFILES}/summary`);
    expect(page.statusCode, page.body).toBe(200);
    return (page.json().profiles as { profile_id: string; last_seen_at: string }[]).map((row) => [
      row.profile_id,
      row.last_seen_at,
    ]);
  };
  const snapshotLastSeen = async () => {
    const { path } = await writeSnapshot(env.context.store, join(env.dir, 'snap.duckdb'), {
      replace: true,
    });
    const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll(
      `SELECT profile_id, strftime(last_seen_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS last_seen_at
       FROM profiles WHERE merged_into IS NULL ORDER BY profile_id`,
    );
    connection.closeSync();
    instance.closeSync();
    return reader.getRows();
  };
  const appended = async () =>
    (
      await env.context.store.read((session) =>
        session.allText<{ n: number }>('SELECT count(*) AS n FROM profile_last_seen'),
      )
    )[0]?.n;

  it('answers the newest event time in the profile, the customer table and a snapshot, before and after a fold', async () => {
    await ingest(visit('c1', 'ann@shop.test', '2026-03-01T10:00:00.000Z'));
    await ingest(visit('c1', 'ann@shop.test', '2026-03-01T12:00:00.000Z'));
    // An older event in a later batch does not move it back.
    await ingest(visit('c1', 'ann@shop.test', '2026-03-01T08:00:00.000Z'));
    const ann = await profileOf('ann@shop.test');
    expect(ann.last_seen_at).toBe('2026-03-01T12:00:00.000Z');
    const expected = [[ann.profile_id, '2026-03-01T12:00:00.000Z']];
    expect(await customerTable()).toEqual(expected);
    expect(await snapshotLastSeen()).toEqual(expected);
    expect(await appended()).toBe(3);

    await foldLastSeen(env.context);
    expect(await appended()).toBe(0);
    expect((await profileOf('ann@shop.test')).last_seen_at).toBe('2026-03-01T12:00:00.000Z');
    expect(await customerTable()).toEqual(expected);
    expect(await snapshotLastSeen()).toEqual(expected);
  });

  it("gives a survivor its merged profile's later last seen, appended or folded", async () => {
    await ingest(
      visit('c1', 'ann@shop.test', '2026-03-01T09:00:00.000Z'),
      visit('c2', 'bob@shop.test', '2026-03-01T18:00:00.000Z'),
    );
    await foldLastSeen(env.context);
    await ingest(visit('c3', 'ann@shop.test', '2026-03-01T10:00:00.000Z'));
    await ingest(visit('c4', 'bob@shop.test', '2026-03-01T20:00:00.000Z'));
    // ann's profile is older: bob's merges into it, with its last seen of 20:00.
    await ingest(
      envelope({
        anon: 'c1',
        identifiers: { email: 'bob@shop.test' },
        at: '2026-03-01T11:00:00.000Z',
      }),
    );
    const survivor = await profileOf('bob@shop.test');
    expect(survivor.profile_id).toBe((await profileOf('ann@shop.test')).profile_id);
    expect(survivor.last_seen_at).toBe('2026-03-01T20:00:00.000Z');
    await foldLastSeen(env.context);
    expect((await profileOf('bob@shop.test')).last_seen_at).toBe('2026-03-01T20:00:00.000Z');
    expect(await customerTable()).toEqual([[survivor.profile_id, '2026-03-01T20:00:00.000Z']]);
  });

  it('erases the appended rows of an erased person', async () => {
    await ingest(visit('c1', 'ann@shop.test', '2026-03-01T10:00:00.000Z'));
    await ingest(visit('c2', 'bob@shop.test', '2026-03-01T11:00:00.000Z'));
    const ann = await profileOf('ann@shop.test');
    const erased = await call(env.app, tokens.tenant, 'DELETE', `${PROFILES}/${ann.profile_id}`);
    expect(erased.statusCode, erased.body).toBeLessThan(300);
    const left = await env.context.store.read((session) =>
      session.allText<{ profile_id: string }>('SELECT profile_id FROM profile_last_seen'),
    );
    expect(left).toEqual([{ profile_id: (await profileOf('bob@shop.test')).profile_id }]);
  });
});
