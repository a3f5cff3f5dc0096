import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { issueToken } from '../../src/tenancy/tokens.js';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, registerEventTypes, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

/**
 * A segment whose stored predicate cannot be evaluated, written around the API as an older
 * version or a hand edit leaves it: before, its value of 2^63 failed the binding of every batch.
 */
const BROKEN_PREDICATE = '{"metric":"orders","op":"gte","value":9223372036854775808}';

describe('a segment whose evaluation fails', () => {
  let env: TestEnv;
  let tokens: Tokens;
  let globexCollector: string;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true, eventTypes: false }));
    globexCollector = (
      await issueToken(env.context, 'globex', {
        kind: 'collector',
        workspaceId: null,
        name: 'backend',
      })
    ).token;
    for (const [tenant, token] of [
      ['acme', tokens.tenant],
      ['globex', tokens.otherTenant],
    ] as const) {
      await registerEventTypes(env, token, tenant);
      const defined = await call(
        env.app,
        token,
        'PUT',
        `/v1/tenants/${tenant}/metric-definitions`,
        {
          metric_name: 'orders',
          event_name: 'order_completed',
          value_kind: 'count',
        },
      );
      expect(defined.statusCode, defined.body).toBe(201);
    }
  });
  afterEach(() => env.close());

  const segments = (tenant: string) => `/v1/tenants/${tenant}/segments`;
  const createSegment = async (tenant: string, token: string, id: string) => {
    const response = await call(env.app, token, 'PUT', `${segments(tenant)}/${id}`, {
      workspace_id: 'eu',
      display_name: id,
      predicate: { metric: 'orders', op: 'gte', value: 2 },
    });
    expect(response.statusCode, response.body).toBe(201);
  };
  const breakSegment = (id: string) =>
    env.context.store.write((session) =>
      session.runText(
        "UPDATE segments SET predicate = $predicate WHERE tenant_id = 'acme' AND segment_id = $id",
        { predicate: BROKEN_PREDICATE, id },
      ),
    );
  const members = async (tenant: string, token: string, id: string) =>
    (
      (
        await call(env.app, token, 'GET', `${segments(tenant)}/${id}/members?workspace_id=eu`)
      ).json().members as { email: string }[]
    )
      .map((row) => row.email)
      .sort();
  const definition = async (id: string) =>
    (
      await call(
        env.app,
        tokens.tenant,
        'GET',
        `${segments('acme')}/${id}/definition?workspace_id=eu`,
      )
    ).json();
  let orderNumber = 0;
  const order = (email: string): EventSpec => ({
    name: 'order_completed',
    identifiers: { email },
    properties: { order_id: `o${++orderNumber}` },
  });
  const send = async (token: string, tenant: string, ...specs: EventSpec[]) => {
    const response = await sendServer(
      env,
      token,
      specs.map((spec) => envelope({ ...spec, tenant })),
    );
    expect(response.statusCode, response.body).toBe(202);
  };

  it('is marked with its error and skipped, while other segments and tenants keep updating', async () => {
    await createSegment('acme', tokens.tenant, 'buyers');
    await createSegment('acme', tokens.tenant, 'broken');
    await createSegment('globex', tokens.otherTenant, 'buyers');
    await send(tokens.collector, 'acme', order('ann@shop.test'), order('ann@shop.test'));
    await env.ingest();
    expect(await members('acme', tokens.tenant, 'broken')).toEqual(['ann@shop.test']);

    await breakSegment('broken');
    await send(tokens.collector, 'acme', order('bob@shop.test'), order('bob@shop.test'));
    await send(globexCollector, 'globex', order('zed@globex.test'), order('zed@globex.test'));
    await env.ingest();

    expect(await members('acme', tokens.tenant, 'buyers')).toEqual([
      'ann@shop.test',
      'bob@shop.test',
    ]);
    expect(await members('globex', tokens.otherTenant, 'buyers')).toEqual(['zed@globex.test']);
    // Skipped, it keeps the members it had.
    expect(await members('acme', tokens.tenant, 'broken')).toEqual(['ann@shop.test']);
    const expectedError = {
      evaluation_error:
        'predicate.value: must be between -9007199254740991 and 9007199254740991 (2^53 - 1), the range metric values hold exactly',
      evaluation_failed_at: '2026-03-01T12:00:00.000Z',
    };
    expect(await definition('broken')).toMatchObject(expectedError);
    expect(await definition('buyers')).toMatchObject({
      evaluation_error: null,
      evaluation_failed_at: null,
    });
    const listed = (
      await call(env.app, tokens.workspace, 'GET', `${segments('acme')}?workspace_id=eu`)
    ).json().segments as { segment_id: string }[];
    expect(listed.find((segment) => segment.segment_id === 'broken')).toMatchObject(expectedError);

    // Setting its status clears the error and tries it again, with a full evaluation.
    env.clock.advance(60_000);
    const reset = await call(env.app, tokens.tenant, 'PUT', `${segments('acme')}/broken/status`, {
      workspace_id: 'eu',
      status: 'active',
    });
    expect(reset.json()).toMatchObject({ evaluation_error: null, evaluation_failed_at: null });
    await env.ingest();
    expect(await definition('broken')).toMatchObject({
      ...expectedError,
      evaluation_failed_at: '2026-03-01T12:01:00.000Z',
    });
  });

  it('is marked when it breaks before its first evaluation, and ingest goes on', async () => {
    await createSegment('acme', tokens.tenant, 'buyers');
    await createSegment('acme', tokens.tenant, 'broken');
    await breakSegment('broken');
    await send(tokens.collector, 'acme', order('ann@shop.test'), order('ann@shop.test'));
    await env.ingest();
    expect(await members('acme', tokens.tenant, 'buyers')).toEqual(['ann@shop.test']);
    expect(await members('acme', tokens.tenant, 'broken')).toEqual([]);
    expect((await definition('broken')).evaluation_error).toMatch(/^predicate\.value: /);
  });
});
