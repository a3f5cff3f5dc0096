import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERASURES_PER_MINUTE, settlePurges } from '../../src/privacy/erase.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';
import { waitUntil } from '../helpers/wait.js';

const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';
const ERASURES = '/v1/tenants/acme/erasures';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Every file of the data directory that holds `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  return filesUnder(dir).filter((path) => readFileSync(path).includes(Buffer.from(needle)));
}

interface AuditRow {
  profile_id: string;
  purged_at: string | null;
}

describe('erasures under load', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  /** One order per email; answers each customer's event id. */
  const orders = async (emails: string[]) => {
    const events = emails.map((email, index) =>
      envelope({
        name: 'order_completed',
        identifiers: { email },
        properties: { order_id: `order-${email}-${index}` },
      }),
    );
    const response = await sendServer(env, tokens.collector, events);
    expect(response.statusCode, response.body).toBe(202);
    await env.ingest();
    await env.context.store.checkpoint();
    return events.map((event) => event.id as string);
  };
  const lookup = async (email: string) => {
    const response = await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?email=${email}`);
    return response.statusCode === 200 ? (response.json().profile_id as string) : null;
  };
  const erase = (profileId: string) =>
    call(env.app, tokens.tenant, 'DELETE', `${PROFILES}/${profileId}`);
  const audit = async () =>
    (await call(env.app, tokens.tenant, 'GET', `${ERASURES}?limit=100`)).json()
      .erasures as AuditRow[];
  const purgedOf = async (profileId: string) =>
    (await audit()).find((row) => row.profile_id === profileId)?.purged_at;

  it('purges one erasure with exactly one rewrite, started by itself, while the ingest loop runs', async () => {
    const [annEvent, bobEvent] = await orders(['ann@shop.test', 'bob@shop.test']);
    const ann = (await lookup('ann@shop.test')) as string;

    expect((await erase(ann)).statusCode).toBe(200);
    expect(env.context.store.rewrites).toBe(0);
    // The loop's upkeep looks for unpurged erasures on every pass, also while the purge runs.
    await waitUntil(async () => {
      await env.ingest();
      return env.context.store.rewrites > 0;
    }, 'the purge');
    await env.ingest();
    await settlePurges(env.context);

    expect(env.context.store.rewrites).toBe(1);
    expect(await purgedOf(ann)).not.toBeNull();
    expect(filesHolding(env.dir, annEvent as string)).toEqual([]);
    expect(filesHolding(env.dir, bobEvent as string)).not.toEqual([]);
  });

  it('purges a burst of 20 erasures with at most two rewrites, leaving none of their bytes', async () => {
    const emails = Array.from({ length: 22 }, (_, index) => `customer-${index}@shop.test`);
    const events = await orders(emails);
    const profiles = await Promise.all(emails.map(lookup));
    const erased = profiles.slice(0, 20) as string[];

    for (const profileId of erased) {
      const response = await erase(profileId);
      expect(response.statusCode, response.body).toBe(200);
    }
    await settlePurges(env.context);

    expect(env.context.store.rewrites).toBeGreaterThan(0);
    expect(env.context.store.rewrites).toBeLessThanOrEqual(2);
    const rows = await audit();
    expect(rows).toHaveLength(20);
    expect(rows.filter((row) => row.purged_at === null)).toEqual([]);
    for (const eventId of events.slice(0, 20)) {
      expect(filesHolding(env.dir, eventId), eventId).toEqual([]);
    }
    for (const [index, eventId] of events.slice(20).entries()) {
      expect(filesHolding(env.dir, eventId)).not.toEqual([]);
      expect(await lookup(emails[20 + index] as string)).toBe(profiles[20 + index]);
    }
  });

  it('answers erasures, reads and the collector while a rewrite copies the file, and the swap brings nothing back', async () => {
    const [annEvent, bobEvent, cidEvent] = await orders([
      'ann@shop.test',
      'bob@shop.test',
      'cid@shop.test',
    ]);
    const ann = (await lookup('ann@shop.test')) as string;
    const bob = (await lookup('bob@shop.test')) as string;
    expect((await erase(ann)).statusCode).toBe(200);

    // A rewrite held in its copy, which marks purged what its snapshot no longer holds.
    let endCopy = () => {};
    const copyHeld = new Promise<void>((resolve) => {
      endCopy = resolve;
    });
    let copyReached = () => {};
    const inCopy = new Promise<void>((resolve) => {
      copyReached = resolve;
    });
    const happened: string[] = [];
    const rewrite = env.context.store
      .replaceWithCopy({
        inCopy: async (session) => {
          copyReached();
          await copyHeld;
          await session.run('erasure_mark_purged', { now: '2026-03-01T12:00:00.000Z' });
        },
      })
      .then(() => happened.push('rewrite swapped'));
    await inCopy;

    const bobErased = await erase(bob);
    happened.push('erasure answered');
    expect(bobErased.statusCode, bobErased.body).toBe(200);
    expect(await lookup('bob@shop.test')).toBeNull();
    expect(await lookup('cid@shop.test')).not.toBeNull();
    const collected = await sendServer(env, tokens.collector, [
      envelope({ name: 'page_viewed', identifiers: { email: 'dan@shop.test' } }),
    ]);
    expect(collected.statusCode).toBe(202);
    // Whatever marks Bob's erasure purged comes later than the copy that cannot have.
    env.clock.advance(60_000);

    endCopy();
    await rewrite;
    expect(happened).toEqual(['erasure answered', 'rewrite swapped']);
    await settlePurges(env.context);

    // Bob's erasure ran again on the copy, so the swap did not bring him back; the purge after
    // it took his bytes, and only it marked him purged.
    expect(env.context.store.rewrites).toBe(2);
    expect(await lookup('bob@shop.test')).toBeNull();
    expect(await purgedOf(ann)).toBe('2026-03-01T12:00:00.000Z');
    expect(await purgedOf(bob)).toBe('2026-03-01T12:01:00.000Z');
    for (const eventId of [annEvent, bobEvent]) {
      expect(filesHolding(env.dir, eventId as string)).toEqual([]);
    }
    expect(filesHolding(env.dir, cidEvent as string)).not.toEqual([]);
    expect(await lookup('cid@shop.test')).not.toBeNull();
  });

  it(`limits a tenant to ${ERASURES_PER_MINUTE} erasure requests a minute with 429 and retry-after`, async () => {
    const unknown = (index: number) => `p_${index.toString(16).padStart(24, '0')}`;
    for (let index = 0; index < ERASURES_PER_MINUTE; index++) {
      expect((await erase(unknown(index))).statusCode).toBe(404);
    }
    const limited = await erase(unknown(ERASURES_PER_MINUTE));
    expect(limited.statusCode).toBe(429);
    expect(limited.headers['retry-after']).toBe('60');
    expect(limited.json()).toEqual({
      error: { code: 'rate_limited', message: 'too many requests; retry after 60 s' },
    });
    // Dry runs change nothing and are not counted; other tenants have their own budget.
    const dryRun = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `${PROFILES}/${unknown(0)}?dry_run=true`,
    );
    expect(dryRun.statusCode).toBe(404);
    const otherTenant = await call(
      env.app,
      tokens.otherTenant,
      'DELETE',
      `/v1/tenants/globex/workspaces/eu/profiles/${unknown(0)}`,
    );
    expect(otherTenant.statusCode).toBe(404);

    env.clock.advance(45_000);
    expect((await erase(unknown(0))).headers['retry-after']).toBe('15');
    env.clock.advance(15_000);
    expect((await erase(unknown(0))).statusCode).toBe(404);
  });
});
