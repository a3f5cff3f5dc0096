import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type GeneratedEvent, generateEvents } from '../../src/demo/generator.js';
import { openTestEnv, type TestEnv } from '../helpers/context.js';
import { registerEventTypes, sendBrowser, sendServer } from '../helpers/events.js';
import { seedTenants, type Tokens } from '../helpers/tenant.js';

const STREAM: GeneratedEvent[] = [
  ...generateEvents({
    seed: 7,
    tenantId: 'acme',
    workspaceIds: ['eu', 'us'],
    events: 240,
    visitors: 30,
    start: new Date('2026-02-01T00:00:00Z'),
  }),
];

/** Fewer visitors, so that 80 events still merge profiles (two merges, ten profiles). */
const SHORT_STREAM: GeneratedEvent[] = [
  ...generateEvents({
    seed: 8,
    tenantId: 'acme',
    workspaceIds: ['eu', 'us'],
    events: 80,
    visitors: 8,
    start: new Date('2026-02-01T00:00:00Z'),
  }),
];

/** Sends events in stream order, one request per run of same-source events. */
async function send(env: TestEnv, tokens: Tokens, events: GeneratedEvent[]): Promise<void> {
  let start = 0;
  while (start < events.length) {
    const source = events[start]?.source;
    let end = start;
    while (end < events.length && events[end]?.source === source) end += 1;
    const chunk = events.slice(start, end);
    for (const workspace of ['eu', 'us']) {
      const inWorkspace = chunk
        .filter((e) => e.event.workspace_id === workspace)
        .map((e) => e.event);
      if (inWorkspace.length === 0) continue;
      const response =
        source === 'browser'
          ? await sendBrowser(env, inWorkspace, { workspace })
          : await sendServer(env, tokens.collector, inWorkspace);
      expect(response.statusCode, response.body).toBe(202);
      expect(response.json().rejected).toEqual([]);
    }
    start = end;
  }
}

/** Everything identity resolution decides, in a form that does not depend on row order. */
async function snapshot(env: TestEnv) {
  return env.context.store.read(async (session) => ({
    profiles: await session.allText(
      `SELECT p.workspace_id, p.profile_id, p.merged_into, p.created_at,
         (SELECT list(identifier_key ORDER BY identifier_key) FROM profile_identifiers i
          WHERE i.workspace_id = p.workspace_id AND i.profile_id = p.profile_id) AS keys,
         (SELECT list(event_id ORDER BY event_id) FROM events e
          LEFT JOIN profiles q USING (tenant_id, workspace_id, profile_id)
          WHERE e.workspace_id = p.workspace_id AND coalesce(q.merged_into, e.profile_id) = p.profile_id) AS events
       FROM profiles p ORDER BY p.workspace_id, p.profile_id`,
    ),
    merges: await session.allText(
      'SELECT workspace_id, merged_profile_id, survivor_profile_id FROM profile_merges ORDER BY ALL',
    ),
    events: await session.allText('SELECT count(*) AS n FROM events'),
    // Ingest alone keeps these unique: the tables have no key index (migration 007).
    repeated: await session.allText(
      `SELECT
         (SELECT count(*) FROM (SELECT workspace_id, identifier_key FROM profile_identifiers GROUP BY ALL HAVING count(*) > 1)) AS identifiers,
         (SELECT count(*) FROM (SELECT workspace_id, profile_id FROM profiles GROUP BY ALL HAVING count(*) > 1)) AS profiles`,
    ),
  }));
}

describe('micro-batch boundaries', () => {
  const envs: TestEnv[] = [];
  afterEach(async () => {
    for (const env of envs.splice(0)) await env.close();
  });

  async function run(batchSize: number, maxBatchEvents?: number, stream = STREAM) {
    // One master key for every run: identifier keys, and so profile ids, derive from it.
    const env = await openTestEnv({
      collector: true,
      config: { master_key: '5e'.repeat(32) },
      maxBatchEvents,
    });
    envs.push(env);
    const tokens = await seedTenants(env.context);
    await registerEventTypes(env, tokens.tenant);
    for (let start = 0; start < stream.length; start += batchSize) {
      await send(env, tokens, stream.slice(start, start + batchSize));
      await env.ingest();
    }
    return snapshot(env);
  }

  // The whole stream in one batch is what two cases compare against: ingested once, for both.
  let wholeStream: ReturnType<typeof snapshot> | undefined;
  const ingestedWhole = () => {
    wholeStream ??= run(1000);
    return wholeStream;
  };

  it('gives the same profiles, identifiers, merges and events for batches of 7 and 1000', async () => {
    const whole = await ingestedWhole();
    expect(whole.merges.length).toBeGreaterThan(0);
    expect(whole.profiles.length).toBeGreaterThan(10);
    expect(whole.repeated).toEqual([{ identifiers: 0, profiles: 0 }]);
    expect(await run(7)).toEqual(whole);
  }, 120_000);

  // One event a batch costs a batch's fixed work per event; the stream property test
  // (stream-model.integration.test.ts) runs every generated stream that way too.
  it('gives the same result one event a batch, on a shorter stream with merges', async () => {
    const whole = await run(1000, undefined, SHORT_STREAM);
    expect(whole.merges.length).toBeGreaterThan(0);
    expect(await run(1, undefined, SHORT_STREAM)).toEqual(whole);
  }, 120_000);

  it('gives the same result when files larger than a batch are cut into parts', async () => {
    const whole = await ingestedWhole();
    // Each workspace's file holds over 100 lines; a batch takes at most 25.
    const cut = await run(1000, 25);
    expect(cut).toEqual(whole);
    const env = envs.at(-1) as TestEnv;
    const files = await env.context.store.read((session) =>
      session.allText<{ path: string; lines: number }>(
        'SELECT path, lines FROM ingested_files ORDER BY path',
      ),
    );
    expect(files.length).toBeGreaterThan(8);
    for (const file of files) {
      expect(file.path).toMatch(/\.p\d{6}\.ndjson$/);
      expect(file.lines).toBeLessThanOrEqual(25);
    }
    expect(files.reduce((sum, file) => sum + file.lines, 0)).toBe(STREAM.length);
    const left = readdirSync(join(env.dir, 'landing'), { recursive: true }).filter((name) =>
      /\.ndjson/.test(String(name)),
    );
    expect(left).toEqual([]);
  }, 120_000);
});

describe('no plain identifier in the data directory', () => {
  it('leaves no email or phone of the fixtures in any file after ingest', async () => {
    const env = await openTestEnv({ collector: true });
    try {
      const tokens = await seedTenants(env.context);
      await registerEventTypes(env, tokens.tenant);
      await send(env, tokens, STREAM);
      await env.ingest();
      await env.context.store.checkpoint();

      const plain = new Set<string>();
      for (const { event } of STREAM) {
        const identifiers = (event.properties.identifiers ?? {}) as Record<string, string>;
        for (const type of ['email', 'phone']) {
          const value = identifiers[type]?.trim();
          if (!value || value.length < 6) continue;
          plain.add(value);
          plain.add(value.toLowerCase());
          if (type === 'phone') plain.add(`+91${value}`);
        }
      }
      expect(plain.size).toBeGreaterThan(10);
      const files = readdirSync(env.dir, { recursive: true })
        .map((name) => join(env.dir, String(name)))
        .filter((path) => statSync(path).isFile());
      expect(files.some((path) => path.endsWith('cds.duckdb'))).toBe(true);
      for (const path of files) {
        const bytes = readFileSync(path);
        for (const value of plain) expect(bytes.includes(value), `${value} in ${path}`).toBe(false);
      }
    } finally {
      await env.close();
    }
  });
});
