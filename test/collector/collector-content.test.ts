import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_PROPERTY_DEPTH, MAX_PROPERTY_KEYS } from '../../src/collector/event-content.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import type { Tokens } from '../helpers/tenant.js';

/** An object `levels` deep, itself included: `{a: {a: … {}}}`. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let level = 1; level < levels; level += 1) value = { a: value };
  return value;
}

function withKeys(count: number): Record<string, number> {
  return Object.fromEntries(Array.from({ length: count }, (_, index) => [`k${index}`, index]));
}

/** A browser event as JSON text whose properties hold arrays nested `levels` deep. */
function deepEventText(id: string, levels: number): string {
  const event = JSON.stringify(envelope({ id, anon: 'v1', properties: { deep: 0 } }));
  return event.replace('"deep":0', `"deep":${'['.repeat(levels)}${']'.repeat(levels)}`);
}

describe('what the collector refuses in an event, per event', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  const post = (url: string, payload: string, auth?: string) =>
    env.app.inject({
      method: 'POST',
      url,
      headers: {
        'content-type': 'application/json',
        ...(auth
          ? { authorization: `Bearer ${auth}` }
          : { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' }),
      },
      payload,
    });
  const batchOf = (events: string[]) => `{"events":[${events.join(',')}]}`;
  const storedIds = async () =>
    (
      await env.context.store.read((session) =>
        session.allText<{ event_id: string }>('SELECT event_id FROM events ORDER BY event_id'),
      )
    ).map((row) => row.event_id);
  const browser = (id: string, properties: Record<string, unknown>) =>
    JSON.stringify(envelope({ id, anon: 'v1', properties }));

  it('refuses properties nested too deep or with too many keys, by index, and lands the rest', async () => {
    const response = await post(
      '/v1/events/batch',
      batchOf([
        browser('deepest-allowed', { a: nested(MAX_PROPERTY_DEPTH - 1) }),
        browser('too-deep', { a: nested(MAX_PROPERTY_DEPTH) }),
        browser('most-keys', withKeys(MAX_PROPERTY_KEYS)),
        browser('too-many-keys', { a: withKeys(MAX_PROPERTY_KEYS) }),
        deepEventText('thousands-deep', 5_000),
      ]),
    );
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json()).toEqual({
      accepted: 2,
      rejected: [
        {
          index: 1,
          code: 'properties_too_deep',
          message: `properties: nest more than ${MAX_PROPERTY_DEPTH} levels deep`,
        },
        {
          index: 3,
          code: 'too_many_properties',
          message: `properties: hold more than ${MAX_PROPERTY_KEYS} keys in all`,
        },
        {
          index: 4,
          code: 'properties_too_deep',
          message: `properties: nest more than ${MAX_PROPERTY_DEPTH} levels deep`,
        },
      ],
    });
    await env.ingest();
    expect(await storedIds()).toEqual(['deepest-allowed', 'most-keys']);
  });

  it('refuses 400,000 levels deep (a body near the 1 MiB limit) without a crash, on the worker threads and on the single endpoint (422)', async () => {
    const depth = 400_000;
    const large = await post(
      '/v1/events/batch',
      batchOf([deepEventText('deep', depth), browser('fine', {})]),
    );
    expect(large.statusCode, large.body).toBe(202);
    expect(large.json()).toMatchObject({
      accepted: 1,
      rejected: [{ index: 0, code: 'properties_too_deep' }],
    });
    const single = await post('/v1/events', deepEventText('deep-single', depth));
    expect(single.statusCode).toBe(422);
    expect(single.json().error).toMatchObject({
      code: 'validation_failed',
      message: `properties: nest more than ${MAX_PROPERTY_DEPTH} levels deep`,
    });
    await env.ingest();
    expect(await storedIds()).toEqual(['fine']);
  });

  it('refuses a lone UTF-16 surrogate in any string or key, and keeps a well-formed pair', async () => {
    const lone = '\\ud800';
    const response = await post(
      '/v1/events/batch',
      batchOf([
        browser('pair', { emoji: '\u{1F600}' }),
        browser('in-value', { note: 'x' }).replace('"x"', `"a${lone}b"`),
        browser('in-key', { note: 'x' }).replace('"note"', `"n${lone}"`),
        browser('in-nested-key', { o: { k: 1 } }).replace('"k"', `"\\udc00"`),
        browser('in-identifier', {}).replace(
          '"anon_id":"cookie:v1"',
          `"anon_id":"cookie:v${lone}"`,
        ),
      ]),
    );
    expect(response.statusCode, response.body).toBe(202);
    expect(response.json()).toEqual({
      accepted: 1,
      rejected: [
        {
          index: 1,
          code: 'lone_surrogate',
          message: 'properties.note: holds a lone UTF-16 surrogate',
        },
        {
          index: 2,
          code: 'lone_surrogate',
          message: `properties.n\ud800: has a key with a lone UTF-16 surrogate`,
        },
        {
          index: 3,
          code: 'lone_surrogate',
          message: `properties.o.\udc00: has a key with a lone UTF-16 surrogate`,
        },
        { index: 4, code: 'lone_surrogate', message: 'anon_id: holds a lone UTF-16 surrogate' },
      ],
    });
    const single = await post(
      '/v1/events',
      browser('single', { note: `x` }).replace('"x"', `"${lone}"`),
    );
    expect(single.statusCode).toBe(422);
    expect(single.json().error.message).toBe('properties.note: holds a lone UTF-16 surrogate');
    await env.ingest();
    expect(await storedIds()).toEqual(['pair']);
  });

  it('refuses a server event that names no identifier at all; undeclared types stay for ingest to judge', async () => {
    const server = (id: string, spec: Parameters<typeof envelope>[0]) =>
      JSON.stringify(envelope({ id, ...spec }));
    const response = await post(
      '/v1/server/events/batch',
      batchOf([
        server('none', {}),
        server('blank', { identifiers: { email: '  ', phone: '' } }),
        server('not-values', { identifiers: { email: null, phone: true, device_id: { a: 'b' } } }),
        server('not-an-object', { properties: { identifiers: ['ann@shop.test'] } }),
        server('cookie', { anon: 'v1' }),
        server('number', { identifiers: { phone: 9876543210 } }),
        server('undeclared', { identifiers: { loyalty: 'L-1' } }),
      ]),
      tokens.collector,
    );
    expect(response.statusCode, response.body).toBe(202);
    const noIdentifiers = {
      code: 'no_identifiers',
      message:
        'properties.identifiers: holds no identifier value (a non-empty string or a number), and there is no anon_id',
    };
    expect(response.json()).toEqual({
      accepted: 3,
      rejected: [0, 1, 2, 3].map((index) => ({ index, ...noIdentifiers })),
    });
    const single = await post(
      '/v1/server/events',
      JSON.stringify(envelope({ identifiers: {} })),
      tokens.collector,
    );
    expect(single.statusCode).toBe(422);
    expect(single.json().error.message).toBe(noIdentifiers.message);

    await env.ingest();
    expect(await storedIds()).toEqual(['cookie', 'number']);
    const rejected = await env.context.store.read((session) =>
      session.allText<{ event_id: string; reason: string }>(
        'SELECT event_id, reason FROM rejected_events',
      ),
    );
    expect(rejected).toEqual([{ event_id: 'undeclared', reason: 'no_identifiers' }]);
  });
});
