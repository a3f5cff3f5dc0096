import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookSender } from '../../src/webhooks/sender.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import type { Receiver } from '../helpers/receiver.js';
import { call, type Tokens } from '../helpers/tenant.js';
import { openWebhookEnv } from '../helpers/webhook-env.js';

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';
const SEGMENTS = '/v1/tenants/acme/segments';

describe('consent travels with every event (issue 39, items 5–6)', () => {
  let env: TestEnv;
  let tokens: Tokens;
  let receiver: Receiver;
  let sender: WebhookSender;

  beforeEach(async () => {
    ({ env, tokens, receiver, sender } = await openWebhookEnv(SECRET));
    const workspace = await call(env.app, tokens.tenant, 'PUT', '/v1/tenants/acme/workspaces/eu', {
      consent_categories: ['marketing', 'analytics'],
      consent_default: 'deny',
    });
    expect(workspace.statusCode, workspace.body).toBe(200);
    expect(workspace.json()).toMatchObject({
      consent_categories: ['marketing', 'analytics'],
      consent_default: 'deny',
    });
  });
  afterEach(async () => {
    await env.close();
    await receiver.close();
  });

  /** A message of Segment's Tracking API, its write key a collector token of workspace eu. */
  const segmentTrack = async (body: Record<string, unknown>) => {
    const minted = await call(env.app, tokens.tenant, 'POST', '/v1/tenants/acme/tokens', {
      kind: 'collector',
      workspace_id: 'eu',
      name: 'backend',
    });
    return env.app.inject({
      method: 'POST',
      url: '/v1/track',
      headers: {
        authorization: `Basic ${Buffer.from(`${minted.json().token}:`).toString('base64')}`,
        'content-type': 'application/json',
      },
      payload: { event: 'Signed Up', timestamp: '2026-03-01T10:00:00.000Z', ...body },
    });
  };
  const native = async (
    email: string,
    consent: Record<string, unknown> | undefined,
    at: string,
  ) => {
    const sent = await sendServer(env, tokens.collector, [
      envelope({
        name: 'order_completed',
        at,
        identifiers: { email },
        properties: {
          order_id: `o-${email}-${at}`,
          ...(consent === undefined ? {} : { consent }),
        },
      }),
    ]);
    expect(sent.statusCode, sent.body).toBe(202);
  };
  const consentOf = async (email: string) => {
    const found = await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?email=${email}`);
    expect(found.statusCode, found.body).toBe(200);
    const view = await call(
      env.app,
      tokens.tenant,
      'GET',
      `${PROFILES}/${found.json().profile_id}`,
    );
    return (view.json().consent as { category: string; granted: boolean; source: string }[]).map(
      ({ category, granted }) => [category, granted],
    );
  };

  it("reads Segment's, RudderStack's and the envelope's shapes into each profile's ledger, newest choice first", async () => {
    const segment = await segmentTrack({
      context: {
        traits: { email: 'ann@shop.test' },
        consent: { categoryPreferences: { marketing: true, analytics: false, 'bad/name': true } },
      },
    });
    expect(segment.statusCode, segment.body).toBe(200);
    const rudder = await segmentTrack({
      context: {
        traits: { email: 'bob@shop.test' },
        consentManagement: { allowedConsentIds: ['analytics'], deniedConsentIds: ['marketing'] },
      },
    });
    expect(rudder.statusCode, rudder.body).toBe(200);
    await native(
      'cat@shop.test',
      { marketing: true, analytics: 'maybe' },
      '2026-03-01T09:00:00.000Z',
    );
    await native('cat@shop.test', { marketing: false }, '2026-03-01T11:00:00.000Z');
    // An older choice arriving late does not undo the newer one.
    await native('cat@shop.test', { marketing: true }, '2026-03-01T08:00:00.000Z');
    await env.ingest();

    expect(await consentOf('ann@shop.test')).toEqual([
      ['analytics', false],
      ['marketing', true],
    ]);
    expect(await consentOf('bob@shop.test')).toEqual([
      ['analytics', true],
      ['marketing', false],
    ]);
    expect(await consentOf('cat@shop.test')).toEqual([['marketing', false]]);
  });

  it('withholds a queued delivery whose profile revoked consent, and one without any choice under a deny default; erasure removes the ledger', async () => {
    const created = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/buyers`, {
      workspace_id: 'eu',
      display_name: 'Buyers',
      predicate: { event: 'order_completed', op: 'gte', value: 1 },
      required_consent: ['marketing'],
    });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().required_consent).toEqual(['marketing']);
    await env.ingest();

    await native('ann@shop.test', { marketing: true }, '2026-03-01T09:00:00.000Z');
    await native('bob@shop.test', { marketing: true }, '2026-03-01T09:00:00.000Z');
    await native('dan@shop.test', undefined, '2026-03-01T09:00:00.000Z');
    await env.ingest();
    // Ann revokes before the queued entry is sent.
    await native('ann@shop.test', { marketing: false }, '2026-03-01T10:00:00.000Z');
    await env.ingest();
    await sender.deliverDue();

    const members = (
      await call(env.app, tokens.tenant, 'GET', `${SEGMENTS}/buyers/members?workspace_id=eu`)
    ).json().members as { email: string }[];
    expect(members.map((member) => member.email).sort(), 'members count without consent').toEqual([
      'ann@shop.test',
      'bob@shop.test',
      'dan@shop.test',
    ]);
    const profileOf = async (email: string) =>
      (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?email=${email}`)).json()
        .profile_id as string;
    const [ann, bob, dan] = [
      await profileOf('ann@shop.test'),
      await profileOf('bob@shop.test'),
      await profileOf('dan@shop.test'),
    ];
    // Bob's entry, and Ann's revocation announced: ids and categories only.
    const bodies = receiver.bodies();
    expect(
      bodies.filter((body) => body.type === 'segment.entered').map((body) => body.data.profile_id),
    ).toEqual([bob]);
    expect(
      bodies.filter((body) => body.type === 'consent.changed').map((body) => body.data),
    ).toEqual([{ tenant_id: 'acme', workspace_id: 'eu', profile_id: ann, revoked: ['marketing'] }]);
    const deliveries = (
      await call(env.app, tokens.tenant, 'GET', `${SEGMENTS}/buyers/webhooks?workspace_id=eu`)
    ).json().webhooks as { profile_id: string; status: string }[];
    const statusOf = (profile: string) => deliveries.find((d) => d.profile_id === profile)?.status;
    expect([statusOf(ann), statusOf(bob), statusOf(dan)]).toEqual([
      'withheld',
      'delivered',
      'withheld',
    ]);
    const totals = (
      await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/webhook-totals?workspace_id=eu')
    ).json();
    expect(totals.last_24h.withheld).toBe(2);
    // The segment page's count: Ann revoked, Dan never chose under the deny default.
    const counts = await call(
      env.app,
      tokens.tenant,
      'GET',
      `${SEGMENTS}/buyers/member-counts?workspace_id=eu`,
    );
    expect(counts.json()).toMatchObject({ member_count: 3, members_without_consent: 2 });

    const erased = await call(env.app, tokens.tenant, 'DELETE', `${PROFILES}/${ann}`);
    expect(erased.statusCode, erased.body).toBe(200);
    const left = await env.context.store.read((session) =>
      session.allText<{ rows: number }>(
        'SELECT count(*)::INTEGER AS rows FROM consent_ledger WHERE profile_id = $profile_id',
        { profile_id: ann },
      ),
    );
    expect(left).toEqual([{ rows: 0 }]);
  });

  it('announces a revocation whether its grant came in the same batch or an earlier one, and nothing that revokes no grant', async () => {
    // Eve grants and revokes within one batch; Fay across two.
    await native('eve@shop.test', { marketing: true }, '2026-03-01T09:00:00.000Z');
    await native('eve@shop.test', { marketing: false }, '2026-03-01T10:00:00.000Z');
    await native('fay@shop.test', { marketing: true }, '2026-03-01T09:00:00.000Z');
    // Gus only denies what the default denies; Hal denies, then grants.
    await native(
      'gus@shop.test',
      { marketing: false, analytics: false },
      '2026-03-01T09:00:00.000Z',
    );
    await native('hal@shop.test', { marketing: false }, '2026-03-01T09:00:00.000Z');
    await native('hal@shop.test', { marketing: true }, '2026-03-01T10:00:00.000Z');
    await env.ingest();
    await native('fay@shop.test', { marketing: false }, '2026-03-01T10:00:00.000Z');
    // A choice older than Fay's newest changes nothing: no second announcement.
    await native('fay@shop.test', { marketing: true }, '2026-03-01T08:00:00.000Z');
    await env.ingest();
    await sender.deliverDue();

    const profileOf = async (email: string) =>
      (await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?email=${email}`)).json()
        .profile_id as string;
    const announced = receiver
      .bodies()
      .filter((body) => body.type === 'consent.changed')
      .map((body) => [body.data.profile_id, body.data.revoked]);
    expect(announced.sort()).toEqual(
      [
        [await profileOf('eve@shop.test'), ['marketing']],
        [await profileOf('fay@shop.test'), ['marketing']],
      ].sort(),
    );
    expect(await consentOf('hal@shop.test')).toEqual([['marketing', true]]);
  });

  it('refuses a segment that needs a category its workspace does not name', async () => {
    const refused = await call(env.app, tokens.tenant, 'PUT', `${SEGMENTS}/ads`, {
      workspace_id: 'eu',
      display_name: 'Ads',
      predicate: { event: 'order_completed', op: 'gte', value: 1 },
      required_consent: ['advertising'],
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error.details).toEqual([
      expect.objectContaining({ path: 'required_consent[0]' }),
    ]);
  });
});
