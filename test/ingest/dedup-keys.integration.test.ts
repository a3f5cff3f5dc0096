import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/database.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { operatorReadiness } from '../helpers/readiness.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

type Ingest = { events_ingested: number; duplicates: number };

async function counters(env: TestEnv): Promise<Ingest> {
  return operatorReadiness(env);
}

const cartLine = (cart: string, line: string) =>
  envelope({
    name: 'cart_add',
    identifiers: { email: 'ada@acme.test' },
    properties: { cart_id: cart, line },
  });

describe('dedup keys of several key paths', () => {
  let env: TestEnv;
  let tokens: Tokens;
  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true, eventTypes: false }));
    const type = await call(
      env.app,
      tokens.tenant,
      'PUT',
      '/v1/tenants/acme/event-types/cart_add',
      {
        dedup_entity: 'cart_line',
        dedup_key_paths: ['properties.cart_id', 'properties.line'],
      },
    );
    expect(type.statusCode, type.body).toBe(201);
  });
  afterEach(() => env.close());

  it('keep two entities apart whose values differ only in where a | falls', async () => {
    const sent = await sendServer(env, tokens.collector, [
      cartLine('c1|7', '1'),
      cartLine('c1', '7|1'),
    ]);
    expect(sent.statusCode).toBe(202);
    await env.ingest();
    expect(await counters(env)).toMatchObject({ events_ingested: 2, duplicates: 0 });

    await sendServer(env, tokens.collector, [cartLine('c1|7', '1'), cartLine('c1', '7|1')]);
    await env.ingest();
    expect(await counters(env)).toMatchObject({ events_ingested: 2, duplicates: 2 });
  });

  it('still know an event stored under the old key as a duplicate after the upgrade', async () => {
    await sendServer(env, tokens.collector, [
      cartLine('c9', '3'),
      envelope({ identifiers: { email: 'b@acme.test' } }),
    ]);
    await env.ingest();
    // The file as the last release left it: keys joined with '|', migration 009 not yet applied.
    await env.context.store.write(async (session) => {
      await session.runText(
        `UPDATE events SET dedup_key = 'cart_line:c9|3',
           dedup_hash = md5_number(tenant_id || '/' || workspace_id || '/' || event_name || '/cart_line:c9|3')
         WHERE event_name = 'cart_add'`,
      );
      await session.runText('DELETE FROM schema_migrations WHERE version = 9');
    });
    const path = env.context.store.path;
    await env.context.store.close();
    env.context.store = await Store.open(path);

    await sendServer(env, tokens.collector, [cartLine('c9', '3'), cartLine('c9', '4')]);
    await env.ingest();
    expect(await counters(env)).toMatchObject({ events_ingested: 2, duplicates: 1 });
    const keys = await env.context.store.read((session) =>
      session.allText<{ dedup_key: string }>(
        "SELECT dedup_key FROM events WHERE event_name = 'cart_add' ORDER BY dedup_key",
      ),
    );
    expect(keys.map((row) => row.dedup_key)).toEqual([
      'cart_line:["c9","3"]',
      'cart_line:["c9","4"]',
    ]);
  });
});
