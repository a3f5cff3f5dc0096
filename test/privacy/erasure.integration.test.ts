import { mkdirSync, readdirSync, readFileSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { settlePurges } from '../../src/privacy/erase.js';
import { DATA_DIR_SNAPSHOT, writeSnapshot } from '../../src/store/snapshot.js';
import { cdsJsonInProcess } from '../helpers/cli-in-process.js';
import type { TestEnv } from '../helpers/context.js';
import { type EventSpec, envelope, sendServer } from '../helpers/events.js';
import { defineBuyers } from '../helpers/metrics.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';
const ERASURES = '/v1/tenants/acme/erasures';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

/** Every file of the data directory that holds `needle`. */
function filesHolding(dir: string, needle: string | Buffer): string[] {
  const bytes = typeof needle === 'string' ? Buffer.from(needle) : needle;
  return filesUnder(dir).filter((path) => readFileSync(path).includes(bytes));
}

describe('erasure', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({
      collector: true,
      config: { webhook_url: 'http://127.0.0.1:9/hooks', webhook_secret: 'whsec_c2VjcmV0' },
    }));
    await defineBuyers(env, tokens.tenant);
  });
  afterEach(() => env.close());

  let orderNumber = 0;
  const order = (identifiers: Record<string, string>, spec: EventSpec = {}): EventSpec => ({
    name: 'order_completed',
    identifiers,
    properties: { order_id: `order-${++orderNumber}` },
    ...spec,
  });
  const send = async (...specs: EventSpec[]) => {
    const events = specs.map(envelope);
    const response = await sendServer(env, tokens.collector, events);
    expect(response.statusCode, response.body).toBe(202);
    return events.map((event) => event.id as string);
  };
  const lookup = async (query: string) => {
    const response = await call(env.app, tokens.tenant, 'GET', `${PROFILES}/lookup?${query}`);
    return response.statusCode === 200 ? (response.json().profile_id as string) : null;
  };
  const erase = (profileId: string, token = tokens.tenant, query = '') =>
    call(env.app, token, 'DELETE', `${PROFILES}/${profileId}${query}`);
  const count = async (sql: string) =>
    (await env.context.store.read((session) => session.allText<{ n: number }>(sql)))[0]?.n;
  const memberCount = async () =>
    (
      (
        await call(env.app, tokens.tenant, 'GET', '/v1/tenants/acme/segments?workspace_id=eu')
      ).json().segments as { member_count: number }[]
    )[0]?.member_count;

  it('erases a profile by id with everything derived from it, and answers with the counts', async () => {
    await send(
      order({ email: 'ann@shop.test', phone: '9876543210' }),
      order({ email: 'ann@shop.test' }),
      order({ email: 'bob@shop.test' }),
    );
    await env.ingest();
    const ann = (await lookup('email=ann@shop.test')) as string;
    expect(await memberCount()).toBe(2);

    const dryRun = await erase(ann, tokens.tenant, '?dry_run=true');
    expect(dryRun.json()).toMatchObject({ profile_id: ann, dry_run: true });
    expect(await lookup('email=ann@shop.test')).toBe(ann);

    const response = await erase(ann);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toEqual({
      profile_id: ann,
      dry_run: false,
      erased: {
        profiles: 1,
        identifiers: 2,
        metrics: 1,
        segment_memberships: 1,
        history_entries: 1,
        events: 2,
      },
    });
    expect(dryRun.json().erased).toEqual(response.json().erased);
    expect(await lookup('email=ann@shop.test')).toBeNull();
    expect(await lookup('phone=9876543210')).toBeNull();
    expect((await call(env.app, tokens.tenant, 'GET', `${PROFILES}/${ann}`)).statusCode).toBe(404);
    expect(await memberCount()).toBe(1);
    const members = (
      await call(
        env.app,
        tokens.tenant,
        'GET',
        '/v1/tenants/acme/segments/buyers/members?workspace_id=eu',
      )
    ).json().members;
    expect(members.map((row: { email: string }) => row.email)).toEqual(['bob@shop.test']);
    expect(
      await count(`SELECT count(*) AS n FROM webhook_outbox WHERE profile_id = '${ann}'`),
    ).toBe(0);
    expect(
      await count("SELECT count(*) AS n FROM webhook_outbox WHERE type = 'segment.exited'"),
    ).toBe(0);

    // The dry run is not in the audit log; the erasure is, with who asked and no identifier.
    const caller = (await call(env.app, tokens.tenant, 'GET', '/v1/whoami')).json().token_id;
    const audit = await call(env.app, tokens.tenant, 'GET', ERASURES);
    expect(audit.statusCode, audit.body).toBe(200);
    expect(audit.json()).toMatchObject({
      erasures: [
        {
          workspace_id: 'eu',
          profile_id: ann,
          actor: caller,
          erased_at: '2026-03-01T12:00:00.000Z',
          erased: response.json().erased,
        },
      ],
      next_cursor: null,
    });
    expect(caller).toMatch(/^tok_/);
    expect(audit.body).not.toContain('ann@shop.test');
  });

  it('keeps an audit log for tenant tokens, newest first, saying when the file was purged', async () => {
    await send(
      order({ email: 'ann@shop.test' }),
      order({ email: 'bob@shop.test' }),
      order({ email: 'cid@shop.test' }, { workspace: 'us' }),
    );
    await env.ingest();
    const ann = (await lookup('email=ann@shop.test')) as string;
    const bob = (await lookup('email=bob@shop.test')) as string;
    const cid = (
      await call(
        env.app,
        tokens.tenant,
        'GET',
        '/v1/tenants/acme/workspaces/us/profiles/lookup?email=cid@shop.test',
      )
    ).json().profile_id as string;
    const erasures = (query = '', token = tokens.tenant) =>
      call(env.app, token, 'GET', `${ERASURES}${query}`);

    expect((await erase(ann)).statusCode).toBe(200);
    // The answer comes before the file rewrite, which waits a few seconds for more erasures.
    await settlePurges(env.context);
    expect((await erasures()).json().erasures[0].purged_at).toBe('2026-03-01T12:00:00.000Z');
    // No events stream in the embedded default: nothing to expire there.
    expect((await erasures()).json().erasures[0].stream_copies_expire_at).toBeNull();

    env.clock.advance(60_000);
    expect((await erase(bob)).statusCode).toBe(200);
    env.clock.advance(60_000);
    expect(
      (
        await call(
          env.app,
          tokens.tenant,
          'DELETE',
          `/v1/tenants/acme/workspaces/us/profiles/${cid}`,
        )
      ).statusCode,
    ).toBe(200);
    await settlePurges(env.context);

    const all = (await erasures()).json();
    expect(all.erasures.map((row: { profile_id: string }) => row.profile_id)).toEqual([
      cid,
      bob,
      ann,
    ]);
    expect(all.erasures.map((row: { purged_at: string }) => row.purged_at)).toEqual([
      '2026-03-01T12:02:00.000Z',
      '2026-03-01T12:02:00.000Z',
      '2026-03-01T12:00:00.000Z',
    ]);
    expect(
      (await erasures('?workspace_id=eu'))
        .json()
        .erasures.map((row: { profile_id: string }) => row.profile_id),
    ).toEqual([bob, ann]);

    const first = (await erasures('?limit=2')).json();
    expect(first.erasures.map((row: { profile_id: string }) => row.profile_id)).toEqual([cid, bob]);
    const second = (await erasures(`?limit=2&cursor=${first.next_cursor}`)).json();
    expect(second).toMatchObject({ erasures: [{ profile_id: ann }], next_cursor: null });

    expect((await erasures('', tokens.workspace)).statusCode).toBe(403);
    expect((await erasures('', tokens.otherTenant)).statusCode).toBe(403);
    expect((await erasures('?workspace_id=nowhere')).statusCode).toBe(404);
    const badCursor = await erasures('?cursor=not-a-cursor');
    expect(badCursor.statusCode).toBe(422);
    expect(badCursor.json().error.message).toBe('cursor: is not a cursor this endpoint returned');
  });

  it('erases a whole merged cluster, also when given a merged-away id', async () => {
    await send(order({ email: 'ann@shop.test' }, { at: '2026-03-01T09:00:00Z' }));
    await send(order({ phone: '9876543210' }, { at: '2026-03-01T10:00:00Z' }));
    await env.ingest();
    const byPhone = (await lookup('phone=9876543210')) as string;
    await send({ name: 'signed_up', identifiers: { email: 'ann@shop.test', phone: '9876543210' } });
    await env.ingest();
    const survivor = (await lookup('email=ann@shop.test')) as string;
    expect(survivor).not.toBe(byPhone);

    const response = await erase(byPhone);
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json()).toMatchObject({
      profile_id: survivor,
      erased: { profiles: 2, identifiers: 2, events: 3 },
    });
    expect(await count('SELECT count(*) AS n FROM profiles')).toBe(0);
    expect(await count('SELECT count(*) AS n FROM profile_merges')).toBe(0);
  });

  it('drops lines received before the erasure that were still in landing files; later events start anew', async () => {
    await send(order({ email: 'ann@shop.test' }));
    await env.ingest();
    const ann = (await lookup('email=ann@shop.test')) as string;
    await send(order({ email: 'ann@shop.test', cookie: 'c-1' }), order({ email: 'bob@shop.test' }));
    expect((await erase(ann)).statusCode).toBe(200);
    await env.ingest();
    expect(await lookup('email=ann@shop.test')).toBeNull();
    expect(await lookup('email=bob@shop.test')).not.toBeNull();
    expect(await count('SELECT count(*) AS n FROM events')).toBe(1);
    expect(await count('SELECT count(*) AS n FROM rejected_events')).toBe(0);

    env.clock.advance(1000);
    await send(order({ email: 'ann@shop.test' }));
    await env.ingest();
    const again = await lookup('email=ann@shop.test');
    expect(again).not.toBeNull();
    expect(again).not.toBe(ann);
  });

  it('refuses workspace tokens and other tenants, and answers 404 for an unknown or erased id', async () => {
    await send(order({ email: 'ann@shop.test' }));
    await env.ingest();
    const ann = (await lookup('email=ann@shop.test')) as string;
    expect((await erase(ann, tokens.workspace)).statusCode).toBe(403);
    expect((await erase(ann, tokens.otherTenant)).statusCode).toBe(403);
    const unknown = await erase(`p_${'0'.repeat(24)}`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('not_found');
    expect((await erase(ann)).statusCode).toBe(200);
    expect((await erase(ann)).statusCode).toBe(404);
    expect((await erase('not-a-profile')).statusCode).toBe(422);
  });

  it('removes a half-written snapshot a crash left in the data directory', async () => {
    const [annEvent] = await send(order({ email: 'ann.partial@shop.test' }));
    await env.ingest();
    const ann = (await lookup('email=ann.partial@shop.test')) as string;
    // What a snapshot cut off before its rename leaves: rows of the time, Ann's among them.
    const partial = join(env.dir, `${DATA_DIR_SNAPSHOT}.partial`);
    writeFileSync(partial, `rows of the time: ${annEvent}`);

    expect((await erase(ann)).statusCode).toBe(200);
    await settlePurges(env.context);
    expect(filesHolding(env.dir, annEvent as string)).toEqual([]);
  });

  it('purges at the next start an erasure whose file rewrite failed', async () => {
    const annEvents = await send(
      order({ email: 'ann.cut@shop.test' }),
      order({ email: 'bob@shop.test' }),
    );
    await env.ingest();
    await env.context.store.checkpoint();
    const ann = (await lookup('email=ann.cut@shop.test')) as string;
    const [annCiphertext] = await env.context.store.read((session) =>
      session.allText<{ ciphertext: Uint8Array }>(
        `SELECT ciphertext FROM profile_identifiers WHERE profile_id = '${ann}'`,
      ),
    );
    const needle = Buffer.from(annCiphertext?.ciphertext ?? []);
    expect(filesHolding(env.dir, needle)).not.toEqual([]);
    const snapshot = join(env.dir, DATA_DIR_SNAPSHOT);
    await writeSnapshot(env.context.store, snapshot, { replace: false });
    expect(filesHolding(env.dir, annEvents[0] as string)).toContain(snapshot);
    // A directory where the rewrite puts its copy makes the rewrite fail, as a full disk would.
    const copyPath = `${env.context.store.path}.rewrite`;
    mkdirSync(copyPath);

    expect((await erase(ann)).statusCode).toBe(200);
    await settlePurges(env.context);
    expect((await call(env.app, tokens.tenant, 'GET', ERASURES)).json().erasures).toMatchObject([
      { profile_id: ann, purged_at: null },
    ]);
    expect(await lookup('email=ann.cut@shop.test')).toBeNull();
    expect(filesHolding(env.dir, needle)).not.toEqual([]);
    expect(filesHolding(env.dir, annEvents[0] as string)).toContain(snapshot);

    await env.context.store.close();
    rmdirSync(copyPath);
    // Any process that opens the store rewrites the file first; this one waits for it to exit.
    const listArgs = ['--data-dir', env.dir, 'erasures', 'list', '-t', 'acme'];
    await cdsJsonInProcess(listArgs);
    const listed = await cdsJsonInProcess<{
      erasures: { profile_id: string; purged_at: string | null }[];
    }>(listArgs);
    expect(listed.erasures).toHaveLength(1);
    expect(listed.erasures[0]?.profile_id).toBe(ann);
    expect(listed.erasures[0]?.purged_at).not.toBeNull();
    for (const erased of [needle, 'ann.cut@shop.test', annEvents[0] as string]) {
      expect(filesHolding(env.dir, erased), String(erased)).toEqual([]);
    }
    expect(filesHolding(env.dir, annEvents[1] as string)).not.toEqual([]);
  });

  it('tries a failed file rewrite again in the running process once its pause is over', async () => {
    const [annEvent] = await send(order({ email: 'ann.retry@shop.test' }));
    await env.ingest();
    const ann = (await lookup('email=ann.retry@shop.test')) as string;
    const copyPath = `${env.context.store.path}.rewrite`;
    mkdirSync(copyPath);
    expect((await erase(ann)).statusCode).toBe(200);
    await settlePurges(env.context);
    rmdirSync(copyPath);
    const purgedAt = async () =>
      (await call(env.app, tokens.tenant, 'GET', ERASURES)).json().erasures[0].purged_at;

    // The ingest loop's upkeep waits out the pause after a failure, then rewrites.
    await env.ingest();
    await settlePurges(env.context);
    expect(await purgedAt()).toBeNull();
    expect(filesHolding(env.dir, annEvent as string)).not.toEqual([]);
    env.clock.advance(60_000);
    await env.ingest();
    await settlePurges(env.context);
    expect(await purgedAt()).not.toBeNull();
    expect(filesHolding(env.dir, annEvent as string)).toEqual([]);
  });

  it('leaves no byte of the erased identifiers or event ids in the data directory, and every other profile intact', async () => {
    const annEvents = await send(
      order({ email: 'ann.erased@shop.test', phone: '9123456780' }),
      order({ email: 'ann.erased@shop.test', device_id: 'ann-device-7' }),
    );
    const others = Array.from({ length: 40 }, (_, index) =>
      order({ email: `customer-${index}@shop.test` }),
    );
    await send(...others);
    await env.ingest();
    await env.context.store.checkpoint();
    const ann = (await lookup('email=ann.erased@shop.test')) as string;
    const ciphertexts = await env.context.store.read((session) =>
      session.allText<{ ciphertext: Uint8Array; profile_id: string }>(
        'SELECT ciphertext, profile_id FROM profile_identifiers',
      ),
    );
    const annCiphertexts = ciphertexts.filter((row) => row.profile_id === ann);
    const otherCiphertexts = ciphertexts.filter((row) => row.profile_id !== ann);
    expect(annCiphertexts).toHaveLength(3);
    // The search sees stored ciphertext, so not finding Ann's afterwards means something.
    for (const row of annCiphertexts) {
      expect(filesHolding(env.dir, Buffer.from(row.ciphertext))).not.toEqual([]);
    }
    const before = {
      profiles: await count('SELECT count(*) AS n FROM profiles'),
      identifiers: await count('SELECT count(*) AS n FROM profile_identifiers'),
      events: await count('SELECT count(*) AS n FROM events'),
      members: await memberCount(),
    };
    const constraints = () =>
      env.context.store.read((session) =>
        session.allText(
          'SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() ORDER BY ALL',
        ),
      );
    const constraintsBefore = await constraints();
    // A snapshot kept in the data directory (serve --snapshot-every) is written again too.
    await writeSnapshot(env.context.store, join(env.dir, DATA_DIR_SNAPSHOT), { replace: false });

    expect((await erase(ann)).statusCode).toBe(200);
    // The answer comes before the file rewrite, which waits a few seconds for more erasures.
    await settlePurges(env.context);
    expect(await constraints()).toEqual(constraintsBefore);

    for (const needle of [
      'ann.erased@shop.test',
      '9123456780',
      '+919123456780',
      'ann-device-7',
      ...annEvents,
      ...annCiphertexts.map((row) => Buffer.from(row.ciphertext)),
    ]) {
      expect(filesHolding(env.dir, needle), String(needle)).toEqual([]);
    }
    for (const row of otherCiphertexts) {
      expect(filesHolding(env.dir, Buffer.from(row.ciphertext))).not.toEqual([]);
    }
    expect({
      profiles: await count('SELECT count(*) AS n FROM profiles'),
      identifiers: await count('SELECT count(*) AS n FROM profile_identifiers'),
      events: await count('SELECT count(*) AS n FROM events'),
      members: await memberCount(),
    }).toEqual({
      profiles: (before.profiles ?? 0) - 1,
      identifiers: (before.identifiers ?? 0) - 3,
      events: (before.events ?? 0) - 2,
      members: (before.members ?? 0) - 1,
    });
    for (let index = 0; index < 40; index++) {
      expect(await lookup(`email=customer-${index}@shop.test`)).not.toBeNull();
    }
  });
});
