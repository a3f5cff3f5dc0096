import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/database.js';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { defineMetric } from '../helpers/metrics.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const IDENTIFIER_PATHS_MIGRATION = 12;

/**
 * Definitions and event types stored before paths into properties.identifiers were refused:
 * written here with SQL, as the API refuses them now.
 */
const STORE_OLD_DEFINITIONS = `
INSERT INTO metric_definitions (tenant_id, workspace_scope, metric_name, event_name, value_kind, value_path,
  aggregation, keep, window_days, display_name, description, created_at, backfilled_at)
VALUES ('acme', '*', 'contact', 'signed_up', 'property_string', 'properties.identifiers.email',
  'latest', NULL, NULL, NULL, NULL, now(), now());
UPDATE event_types SET dedup_entity = 'person', dedup_key_paths = ['properties.identifiers.email']
WHERE tenant_id = 'acme' AND event_name = 'signed_up';
`;

describe('paths into properties.identifiers stored before they were refused', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
    // A sibling of the same name, reading a plain property: it must survive, rebuilt.
    await defineMetric(env, tokens.tenant, {
      metric_name: 'contact',
      event_name: 'order_completed',
      value_kind: 'property_string',
      value_path: 'properties.contact_name',
      aggregation: 'latest',
    });
    await env.ingest();
    await env.context.store.write((session) => session.runText(STORE_OLD_DEFINITIONS));
  });
  afterEach(async () => {
    await env.context.store.close();
    await env.close();
  });

  const send = async (...specs: EventSpec[]) => {
    const response = await sendServer(env, tokens.collector, specs.map(envelope));
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
  };
  const signUp = (email: string, at: string): EventSpec => ({
    name: 'signed_up',
    at,
    identifiers: { email },
  });
  const order = (email: string, name: string, at: string): EventSpec => ({
    name: 'order_completed',
    at,
    identifiers: { email },
    properties: { order_id: `o-${name}-${at}`, contact_name: name },
  });
  const plainEmailsStored = () =>
    env.context.store.read((session) =>
      session.allText<{ place: string }>(`
        SELECT 'profile_metrics' AS place FROM profile_metrics WHERE contains(string_value, '@')
        UNION ALL SELECT 'metric_strings' FROM metric_strings WHERE contains(value, '@')
        UNION ALL SELECT 'events.dedup_key' FROM events WHERE contains(dedup_key, '@')`),
    );
  /** Runs the migration again on this database, as opening it after an upgrade would. */
  const upgrade = async () => {
    await env.context.store.write((session) =>
      session.runText('DELETE FROM schema_migrations WHERE version = $version', {
        version: IDENTIFIER_PATHS_MIGRATION,
      }),
    );
    await env.context.store.close();
    env.context.store = await Store.open(env.context.dataDir.databasePath);
  };
  const contactOf = async (email: string) => {
    const lookup = await call(
      env.app,
      tokens.tenant,
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/lookup?email=${email}`,
    );
    const profile = await call(
      env.app,
      tokens.tenant,
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/${lookup.json().profile_id}`,
    );
    return JSON.stringify(profile.json());
  };
  const databaseHolds = (needle: string) =>
    [env.context.dataDir.databasePath, `${env.context.dataDir.databasePath}.wal`].some((path) => {
      try {
        return readFileSync(path).includes(Buffer.from(needle));
      } catch {
        return false;
      }
    });

  it('the upgrade removes them and the plain values they stored; the sibling is rebuilt and nothing new leaks', async () => {
    await send(
      order('ann@shop.test', 'Ann', '2026-03-01T08:00:00Z'),
      signUp('ann@shop.test', '2026-03-01T09:00:00Z'),
    );
    // What the old definitions did: the email is a metric value and a dedup key.
    expect((await plainEmailsStored()).map((row) => row.place).sort()).toEqual([
      'events.dedup_key',
      'metric_strings',
      'profile_metrics',
    ]);

    await upgrade();
    expect(await plainEmailsStored()).toEqual([]);
    const definitions = (
      await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/metric-definitions')
    ).json().metric_definitions;
    expect(definitions).toEqual([
      expect.objectContaining({ metric_name: 'contact', event_name: 'order_completed' }),
    ]);
    const signedUp = (await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/event-types'))
      .json()
      .event_types.find((type: { event_name: string }) => type.event_name === 'signed_up');
    expect(signedUp).toMatchObject({ dedup_entity: null, dedup_key_paths: null });

    await env.ingest();
    expect(await contactOf('ann@shop.test')).toContain('"Ann"');

    await send(
      signUp('cy@fresh.test', '2026-03-01T10:00:00Z'),
      order('cy@fresh.test', 'Cy', '2026-03-01T09:00:00Z'),
    );
    expect(await contactOf('cy@fresh.test')).toContain('"Cy"');
    expect(await plainEmailsStored()).toEqual([]);
    await env.context.store.exclusive((session) => session.runText('CHECKPOINT'));
    expect(databaseHolds('cy@fresh.test')).toBe(false);
  });
});
