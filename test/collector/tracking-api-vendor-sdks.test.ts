import Rudder from '@rudderstack/rudder-sdk-node';
import { Analytics } from '@segment/analytics-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CollectorDoor } from '../helpers/collector-door.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendBrowser } from '../helpers/events.js';
import { defineBuyers } from '../helpers/metrics.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';
import { declareUserId, mintWriteKey, registerTrackingCallTypes } from '../helpers/tracking-api.js';

interface ProfileView {
  profile_id: string;
  identifiers: { type: string }[];
  metrics: Record<string, unknown>;
  segments: { segment_id: string }[];
}

let env: TestEnv;
let tokens: Tokens;
let writeKey: string;
let collectorUrl: string;
/** Records what the SDKs send on the way to the collector. */
let door: CollectorDoor;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv({ collector: true }));
  await registerTrackingCallTypes(env, tokens.tenant);
  await declareUserId(env, tokens.tenant);
  writeKey = await mintWriteKey(env, tokens.tenant);
  await defineBuyers(env, tokens.tenant);
  door = new CollectorDoor(await env.app.listen({ port: 0, host: '127.0.0.1' }));
  await door.open();
  collectorUrl = door.url;
});
afterEach(async () => {
  await door.shut();
  await env.close();
});

const batchesSent = () => door.exchanges.filter((exchange) => exchange.url === '/v1/batch');

/** A visitor's page view from the browser, before the shop's backend knows who they are. */
async function browserVisit(visitor: string): Promise<void> {
  const response = await sendBrowser(env, [envelope({ anon: visitor, name: 'page_viewed' })]);
  expect(response.json()).toEqual({ accepted: 1, rejected: [] });
}

async function profileOf(email: string): Promise<ProfileView> {
  const found = await call(
    env.app,
    tokens.tenant,
    'GET',
    `/v1/tenants/acme/workspaces/eu/profiles/lookup?email=${encodeURIComponent(email)}`,
  );
  expect(found.statusCode, found.body).toBe(200);
  const view = await call(
    env.app,
    tokens.tenant,
    'GET',
    `/v1/tenants/acme/workspaces/eu/profiles/${found.json().profile_id}`,
  );
  return view.json() as ProfileView;
}

async function eventNamesOf(profileId: string): Promise<string[]> {
  const rows = await env.context.store.read((session) =>
    session.allText<{ event_name: string }>(
      "SELECT event_name FROM events WHERE tenant_id = 'acme' AND profile_id = $profile ORDER BY event_name",
      { profile: profileId },
    ),
  );
  return rows.map((row) => row.event_name);
}

/** Each line of the live view (issue 31) as `name source outcome`, sorted. */
async function liveLines(): Promise<string[]> {
  const page = await call(
    env.app,
    tokens.workspace,
    'GET',
    '/v1/tenants/acme/workspaces/eu/events',
  );
  expect(page.statusCode, page.body).toBe(200);
  return (page.json().items as { name: string; source: string; outcome: string }[])
    .map((item) => `${item.name} ${item.source} ${item.outcome}`)
    .sort();
}

/** One customer's story, whichever SDK told it: a visit, a login, an order. */
async function expectOneCustomer(email: string): Promise<void> {
  await env.ingest();
  const profile = await profileOf(email);
  expect(profile.identifiers.map((identifier) => identifier.type).sort()).toEqual([
    'cookie',
    'email',
    'user_id',
  ]);
  expect(await eventNamesOf(profile.profile_id)).toEqual([
    'identify',
    'order_completed',
    'page_viewed',
  ]);
  expect(profile.metrics.orders).toBe(1);
  expect(profile.segments.map((segment) => segment.segment_id)).toEqual(['buyers']);
}

describe("the vendors' own server SDKs, pointed at the collector", () => {
  it('@segment/analytics-node: identify and track stored, one profile with the browser visit', async () => {
    await browserVisit('visitor-ana');
    const errors: unknown[] = [];
    const analytics = new Analytics({
      writeKey,
      host: collectorUrl,
      flushInterval: 50,
      maxRetries: 0,
    });
    analytics.on('error', (error) => errors.push(error));
    analytics.identify({
      userId: 'user-ana',
      anonymousId: 'visitor-ana',
      traits: { email: 'Ana@Shop.test', plan: 'gold' },
    });
    analytics.track({
      userId: 'user-ana',
      event: 'Order Completed',
      properties: { order_id: 'o-ana', revenue: 30 },
    });
    await analytics.closeAndFlush();
    expect(errors).toEqual([]);
    expect(batchesSent()).not.toEqual([]);
    for (const batch of batchesSent()) {
      expect(batch.status).toBe(200);
      expect(batch.headers.authorization).toMatch(/^Basic /);
    }
    await expectOneCustomer('ana@shop.test');
    // The live view tells the SDK's events from the browser's and from /v1/server/events'.
    expect(await liveLines()).toEqual([
      'identify segment_api stored',
      'order_completed segment_api stored',
      'page_viewed browser stored',
    ]);
  });

  it('@rudderstack/rudder-sdk-node with gzip: identify and track stored, one profile with the browser visit', async () => {
    await browserVisit('visitor-bo');
    const errors: unknown[] = [];
    const rudder = new Rudder(writeKey, {
      dataPlaneUrl: collectorUrl,
      gzip: true,
      flushInterval: 50,
      retryCount: 0,
      logLevel: 'error',
      errorHandler: (error: unknown) => errors.push(error),
    });
    rudder.identify({
      userId: 'user-bo',
      anonymousId: 'visitor-bo',
      traits: { email: 'bo@shop.test', phone: '9876500002' },
    });
    rudder.track({
      userId: 'user-bo',
      event: 'Order Completed',
      properties: { order_id: 'o-bo', revenue: 12 },
    });
    await new Promise<void>((resolve, reject) =>
      rudder.flush((error?: unknown) => (error ? reject(error) : resolve())),
    );
    expect(errors).toEqual([]);
    expect(batchesSent()).not.toEqual([]);
    for (const batch of batchesSent()) {
      expect(batch.status).toBe(200);
      expect(batch.headers['content-encoding']).toBe('gzip');
    }
    await env.ingest();
    const profile = await profileOf('bo@shop.test');
    expect(profile.identifiers.map((identifier) => identifier.type).sort()).toEqual([
      'cookie',
      'email',
      'phone',
      'user_id',
    ]);
    expect(await eventNamesOf(profile.profile_id)).toEqual([
      'identify',
      'order_completed',
      'page_viewed',
    ]);
    expect(profile.metrics.orders).toBe(1);
    expect(profile.segments.map((segment) => segment.segment_id)).toEqual(['buyers']);
  });
});
