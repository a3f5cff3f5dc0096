import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { maskIdentifier } from '../../src/identity/mask.js';
import type { LiveEvent } from '../../src/ingest/live-events.js';
import { listQuarantine } from '../../src/quarantine/quarantine.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendBrowser, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';
import {
  mintWriteKey,
  postTrackingApi,
  registerTrackingCallTypes,
} from '../helpers/tracking-api.js';

let env: TestEnv;
let tokens: Tokens;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv({ collector: true }));
});
afterEach(() => env.close());

const BASE = '/v1/tenants/acme/workspaces/eu/events';

async function listed(
  token: string,
  query = '',
): Promise<{ items: LiveEvent[]; next_cursor: string | null; stream_cursor: string | null }> {
  const response = await call(env.app, token, 'GET', `${BASE}${query}`);
  expect(response.statusCode, response.body).toBe(200);
  return response.json();
}

/** A sealed landing file of acme/eu named `name` holding `text`, as a collector leaves one. */
function landFile(name: string, text: string): void {
  const partition = join(
    env.context.dataDir.landingDir,
    'tenant=acme',
    'workspace=eu',
    'date=2026-03-01',
    'hour=11',
  );
  mkdirSync(partition, { recursive: true });
  const path = join(partition, `${name}.ndjson`);
  writeFileSync(`${path}.open`, text);
  renameSync(`${path}.open`, path);
}

/** A landing line as a collector writes it, with the fields beside the event given. */
function landingLine(fields: Record<string, unknown>, event: Record<string, unknown>): string {
  return JSON.stringify({ received_at: '2026-03-01T11:00:00.000Z', ...fields, event });
}

/** A sealed landing file of acme/eu whose one line no batch can read: 17 MiB, unterminated. */
function landPoison(eventId: string, fields: Record<string, unknown> = { source: 'server' }): void {
  const line = landingLine(
    { ...fields, collector_id: 'ctest' },
    envelope({
      id: eventId,
      identifiers: { email: 'poison.person@example.com' },
      properties: { pad: 'p'.repeat(17 * 1024 * 1024) },
    }),
  );
  landFile('ctest-00000001', line);
}

/**
 * One line of each outcome in acme/eu: Ana stored (her email in identifiers and in a plain
 * property), her event sent again in a later batch (a duplicate), a line with only an undeclared
 * identifier type and one of an event type deleted before ingest (rejected), a part no batch can
 * read (quarantined). Bob is stored too, for the filters.
 */
async function oneOfEach() {
  const ana = envelope({
    name: 'product_viewed',
    identifiers: { email: ' Ana.Secret@Example.com', phone: '+919876543210' },
    properties: { plan: 'pro', contact: 'ana.secret@example.com' },
  });
  const bob = envelope({ identifiers: { email: 'bob.hidden@example.com' } });
  expect((await sendServer(env, tokens.collector, [ana, bob])).statusCode).toBe(202);
  await env.ingest();
  const unidentified = envelope({ identifiers: { loyalty_id: 'L-secret-1' } });
  const untyped = envelope({ name: 'signed_up', identifiers: { email: 'ana.secret@example.com' } });
  const sent = await sendServer(env, tokens.collector, [ana, unidentified, untyped]);
  expect(sent.json()).toMatchObject({ accepted: 3, rejected: [] });
  await call(env.app, tokens.tenant, 'DELETE', '/v1/tenants/acme/event-types/signed_up');
  await env.ingest();
  landPoison('poison-1');
  await env.ingest();
  expect(await listQuarantine(env.context.dataDir)).toHaveLength(1);
  const lookup = await call(
    env.app,
    tokens.tenant,
    'GET',
    '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=ana.secret%40example.com',
  );
  return {
    ana: String(ana.id),
    bob: String(bob.id),
    unidentified: String(unidentified.id),
    untyped: String(untyped.id),
    anaProfile: lookup.json().profile_id as string,
  };
}

describe('GET /v1/tenants/{t}/workspaces/{w}/events', () => {
  it('lists every line newest first with its outcome, the profile, and masked identifiers', async () => {
    const ids = await oneOfEach();
    const { items, next_cursor, stream_cursor } = await listed(tokens.workspace);
    expect(next_cursor).toBeNull();
    expect(stream_cursor).toEqual(expect.any(String));
    expect(items.map((item) => [item.event_id, item.outcome, item.reason])).toEqual([
      ['poison-1', 'quarantined', expect.stringMatching(/\S/)],
      [ids.untyped, 'rejected', 'unknown_event_type'],
      [ids.unidentified, 'rejected', 'no_identifiers'],
      [ids.ana, 'duplicate', null],
      [ids.bob, 'stored', null],
      [ids.ana, 'stored', null],
    ]);
    const [duplicate, stored] = [items[3], items[5]];
    expect(stored).toEqual({
      event_id: ids.ana,
      name: 'product_viewed',
      occured_at: '2026-03-01T10:00:00.000Z',
      received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      source: 'server',
      outcome: 'stored',
      reason: null,
      profile_id: ids.anaProfile,
      email: maskIdentifier('email', 'ana.secret@example.com'),
      properties: {
        plan: 'pro',
        contact: maskIdentifier('email', 'ana.secret@example.com'),
        identifiers: {
          email: maskIdentifier('email', 'ana.secret@example.com'),
          phone: maskIdentifier('phone', '+919876543210'),
        },
      },
    });
    expect(duplicate?.profile_id).toBe(ids.anaProfile);
    expect(duplicate?.properties).toEqual(stored?.properties);
    // Lines not stored keep no properties, so nothing of what they held is shown.
    expect(items.filter((item) => item.properties === null)).toHaveLength(3);
    const body = JSON.stringify(items);
    expect(body).not.toMatch(/secret@|Secret@|bob\.hidden|9876543210|L-secret|poison\.person/);
  });

  it('masks every identifier as profile views mask it, whatever its type or shape', async () => {
    const shapes = {
      email: 'NoAtSign',
      phone: '+44 20 7946 0958',
      user_id: 'u-123456',
      device_id: 7,
      'a/b~c': 'odd-key',
    };
    const event = envelope({ identifiers: { ...shapes, cookie: 'c-1' } });
    await sendServer(env, tokens.collector, [
      event,
      envelope({ identifiers: { email: 'x@localhost' } }),
      envelope({ identifiers: { email: 'y@.example' } }),
    ]);
    await env.ingest();
    const { items } = await listed(tokens.tenant);
    const identifiers = items.map(
      (item) => (item.properties as { identifiers: Record<string, string> }).identifiers,
    );
    expect(identifiers.slice(0, 2)).toEqual([
      { email: maskIdentifier('email', 'y@.example') },
      { email: maskIdentifier('email', 'x@localhost') },
    ]);
    expect(identifiers[2]).toEqual({
      email: maskIdentifier('email', 'noatsign'),
      phone: maskIdentifier('phone', '+44 20 7946 0958'),
      user_id: maskIdentifier('user_id', 'u-123456'),
      device_id: maskIdentifier('device_id', '7'),
      'a/b~c': maskIdentifier('a/b~c', 'odd-key'),
      cookie: maskIdentifier('cookie', 'c-1'),
    });
  });

  it('filters by name, outcome and profile, and pages through the rest once', async () => {
    const ids = await oneOfEach();
    const names = (page: { items: LiveEvent[] }) => page.items.map((item) => item.event_id);
    expect(names(await listed(tokens.tenant, '?name=product_viewed'))).toEqual([ids.ana, ids.ana]);
    // A part of the name, in any case, finds it too.
    expect(names(await listed(tokens.tenant, '?name=UCT_VIE'))).toEqual([ids.ana, ids.ana]);
    expect(names(await listed(tokens.tenant, '?outcome=rejected'))).toEqual([
      ids.untyped,
      ids.unidentified,
    ]);
    expect(names(await listed(tokens.tenant, '?outcome=quarantined'))).toEqual(['poison-1']);
    expect(names(await listed(tokens.tenant, `?profile_id=${ids.anaProfile}`))).toEqual([
      ids.ana,
      ids.ana,
    ]);
    expect(
      names(await listed(tokens.tenant, `?profile_id=${ids.anaProfile}&outcome=stored`)),
    ).toEqual([ids.ana]);

    const seen: (string | null)[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await listed(tokens.tenant, `?limit=4${cursor ? `&cursor=${cursor}` : ''}`);
      seen.push(...names(page));
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor !== null);
    expect(pages).toBe(2);
    expect(seen).toEqual(names(await listed(tokens.tenant)));

    const refused = async (query: string) =>
      (await call(env.app, tokens.tenant, 'GET', `${BASE}${query}`)).statusCode;
    expect(await refused('?cursor=bm90LWEtY3Vyc29y')).toBe(422);
    expect(await refused('?outcome=lost')).toBe(422);
    expect(await refused('?limit=501')).toBe(422);
  });

  it('names each line’s source, browser, server or segment_api (the Segment tracking API), and filters by it', async () => {
    await registerTrackingCallTypes(env, tokens.tenant);
    const writeKey = await mintWriteKey(env, tokens.tenant);
    const fromBrowser = envelope({ anon: 'visitor-b' });
    const fromServer = envelope({ identifiers: { email: 'server.person@example.com' } });
    expect((await sendBrowser(env, [fromBrowser])).statusCode).toBe(202);
    expect((await sendServer(env, tokens.collector, [fromServer])).statusCode).toBe(202);
    const tracked = await postTrackingApi(
      env,
      '/v1/batch',
      {
        batch: [
          { type: 'track', event: 'Page Viewed', anonymousId: 'visitor-s', messageId: 'm-1' },
          { type: 'identify', anonymousId: 'visitor-s', traits: { plan: 'gold' } },
        ],
      },
      writeKey,
    );
    expect(tracked.json()).toMatchObject({ accepted: 2, rejected: [] });
    await env.ingest();

    const { items } = await listed(tokens.workspace);
    expect(items.map((item) => [item.name, item.source, item.outcome])).toEqual([
      ['identify', 'segment_api', 'stored'],
      ['page_viewed', 'segment_api', 'stored'],
      ['page_viewed', 'server', 'stored'],
      ['page_viewed', 'browser', 'stored'],
    ]);
    const sources = async (source: string) =>
      (await listed(tokens.workspace, `?source=${source}`)).items.map((item) => item.event_id);
    expect(await sources('browser')).toEqual([fromBrowser.id]);
    expect(await sources('server')).toEqual([fromServer.id]);
    expect(await sources('segment_api')).toEqual([items[0]?.event_id, items[1]?.event_id]);
    expect(
      (await listed(tokens.workspace, '?source=segment_api&name=identify')).items,
    ).toHaveLength(1);
    const refused = await call(env.app, tokens.workspace, 'GET', `${BASE}?source=carrier_pigeon`);
    expect(refused.statusCode).toBe(422);
  });

  it('reads a landing file written before lines named their intake as it always did', async () => {
    const old = envelope({ identifiers: { email: 'old.person@example.com' } });
    const segment = envelope({ anon: 'visitor-s' });
    const unknownIntake = envelope({ anon: 'visitor-u' });
    const browser = envelope({ anon: 'visitor-b' });
    const broken = envelope({ anon: 'visitor-x' });
    landFile(
      'cold-00000001',
      `${[
        landingLine({ source: 'server', collector_id: 'cold' }, old),
        landingLine({ source: 'server', intake: 'segment_api', collector_id: 'cold' }, segment),
        landingLine(
          { source: 'server', intake: 'carrier_pigeon', collector_id: 'cold' },
          unknownIntake,
        ),
        landingLine({ source: 'browser', collector_id: 'cold' }, browser),
        landingLine({ source: 'fax', collector_id: 'cold' }, broken),
      ].join('\n')}\n`,
    );
    await env.ingest();
    const { items } = await listed(tokens.tenant);
    expect(items.map((item) => [item.event_id, item.source, item.outcome, item.reason])).toEqual([
      [broken.id, null, 'rejected', 'unparsable_line'],
      [browser.id, 'browser', 'stored', null],
      [unknownIntake.id, 'server', 'stored', null],
      [segment.id, 'segment_api', 'stored', null],
      [old.id, 'server', 'stored', null],
    ]);
    const lookup = await call(
      env.app,
      tokens.tenant,
      'GET',
      '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=old.person%40example.com',
    );
    expect(lookup.statusCode, lookup.body).toBe(200);
  });

  it('names a quarantined line’s source as its intake says', async () => {
    landPoison('poison-segment', { source: 'server', intake: 'segment_api' });
    await env.ingest();
    const { items } = await listed(tokens.tenant, '?source=segment_api');
    expect(items.map((item) => [item.event_id, item.source, item.outcome])).toEqual([
      ['poison-segment', 'segment_api', 'quarantined'],
    ]);
  });

  it('is read by the workspace’s tokens only', async () => {
    await oneOfEach();
    expect((await listed(tokens.workspace)).items).toHaveLength(6);
    const status = async (token: string | null, url = BASE) =>
      (await call(env.app, token, 'GET', url)).statusCode;
    expect(await status(tokens.otherWorkspace)).toBe(403);
    expect(await status(tokens.otherTenant)).toBe(403);
    expect(await status(tokens.collector)).toBe(403);
    expect(await status(null)).toBe(401);
    expect(await status(tokens.tenant, '/v1/tenants/acme/workspaces/nowhere/events')).toBe(404);
    // The other workspace's view holds none of eu's lines.
    const us = await call(
      env.app,
      tokens.otherWorkspace,
      'GET',
      '/v1/tenants/acme/workspaces/us/events',
    );
    expect(us.json().items).toEqual([]);
  });

  it('loses the erased person’s lines with the erasure', async () => {
    const ids = await oneOfEach();
    const erased = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `/v1/tenants/acme/workspaces/eu/profiles/${ids.anaProfile}`,
    );
    expect(erased.statusCode, erased.body).toBe(200);
    const left = (await listed(tokens.tenant)).items;
    expect(left.map((item) => item.event_id)).not.toContain(ids.ana);
    expect(left.map((item) => item.event_id)).toContain(ids.bob);
  });
});
