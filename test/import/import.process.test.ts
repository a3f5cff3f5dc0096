import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { putEventType } from '../../src/catalog/event-types.js';
import { DEMO_TENANT, DEMO_WORKSPACES } from '../../src/cli/demo-setup.js';
import { openContext } from '../../src/cli/open-context.js';
import { generateEvents } from '../../src/demo/generator.js';
import { putIdentifierType } from '../../src/identity/identifier-types.js';
import type { ImportSummary } from '../../src/import/run.js';
import { Store } from '../../src/store/database.js';
import { createTenant } from '../../src/tenancy/tenants.js';
import { demoDataDir, writeBacklog } from '../helpers/backlog.js';
import { type CliResult, runCli, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dirs.js';

/** The demo's events as landing lines, as `writeBacklog` writes them into landing files. */
function demoLines(events: number): string[] {
  const lines: string[] = [];
  for (const { source, event } of generateEvents({
    seed: 5,
    tenantId: DEMO_TENANT,
    workspaceIds: DEMO_WORKSPACES,
    events,
    visitors: Math.max(10, events / 10),
    start: new Date('2026-03-01T00:00:00Z'),
  })) {
    lines.push(
      JSON.stringify({
        received_at: '2026-03-01T12:00:00.000Z',
        source,
        collector_id: 'ctest',
        event,
      }),
    );
  }
  return lines;
}

function writeInput(lines: string[], name = 'history.ndjson'): string {
  const path = join(tempDir(), name);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

async function importJson(dir: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = await runCli(['--data-dir', dir, '--json', 'import', ...args], env);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as ImportSummary;
}

/**
 * What a store holds, independent of its random profile ids: the events, the events grouped by
 * the profile they resolved to, and the metric values.
 */
async function storeShape(dir: string) {
  const store = await Store.open(join(dir, 'cds.duckdb'));
  try {
    return await store.read(async (session) => ({
      events: await session.allText<Record<string, unknown>>(
        `SELECT workspace_id, event_id, event_name, occured_at, count(*) AS copies
         FROM events GROUP BY ALL ORDER BY ALL`,
      ),
      profiles: (
        await session.allText<{ events: string }>(
          `SELECT string_agg(e.event_id, ',' ORDER BY e.event_id) AS events
           FROM events e LEFT JOIN profiles p
             ON p.tenant_id = e.tenant_id AND p.workspace_id = e.workspace_id AND p.profile_id = e.profile_id
           GROUP BY e.workspace_id, coalesce(p.merged_into, e.profile_id)`,
        )
      )
        .map((row) => row.events)
        .sort(),
      metrics: await session.allText<Record<string, unknown>>(
        `SELECT workspace_id, metric_name, number_value, string_value, list_value
         FROM profile_metrics ORDER BY ALL`,
      ),
    }));
  } finally {
    await store.close();
  }
}

async function eventCopies(dir: string): Promise<{ events: number; doubled: number }> {
  const store = await Store.open(join(dir, 'cds.duckdb'));
  try {
    const [row] = await store.read((session) =>
      session.allText<{ events: number; doubled: number }>(
        `SELECT count(*) AS events, count(*) FILTER (WHERE copies > 1) AS doubled
         FROM (SELECT event_id, count(*) AS copies FROM events GROUP BY event_id)`,
      ),
    );
    return row as { events: number; doubled: number };
  } finally {
    await store.close();
  }
}

function oneErrorLine(result: CliResult): string {
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  return lines[0] as string;
}

describe('cds import', () => {
  it('stores a folder of envelope history exactly as cds ingest stores the same lines from landing files, and a second run stores nothing', async () => {
    const events = 3000;
    const lines = demoLines(events);
    // A folder of two files, the second gzipped: taken in path order, so in the lines' order.
    const input = tempDir();
    writeFileSync(join(input, '1-first.ndjson'), `${lines.slice(0, 1800).join('\n')}\n`);
    writeFileSync(join(input, '2-rest.ndjson.gz'), gzipSync(`${lines.slice(1800).join('\n')}\n`));
    const imported = await demoDataDir();
    const ingested = await demoDataDir();
    writeBacklog(ingested, { events, name: 'ctest-00000001' });

    // Small chunks: the history goes through several batches, the backlog through one per workspace.
    const summary = await importJson(imported, [input], { CDS_MAX_BATCH_EVENTS: '700' });
    const ingest = await runCli(['--data-dir', ingested, '--json', 'ingest']);
    expect(ingest.code, ingest.stderr).toBe(0);
    const ingestTotals = JSON.parse(ingest.stdout) as {
      events: number;
      duplicates: number;
      rejected: number;
    };

    expect(summary).toMatchObject({
      files: 2,
      lines: lines.length,
      stored: ingestTotals.events,
      duplicates: ingestTotals.duplicates,
      rejected: ingestTotals.rejected,
      quarantined: 0,
      resumed: false,
      already_imported: 0,
    });
    expect(summary.stored).toBeGreaterThan(2900);
    const [importedShape, ingestedShape] = [await storeShape(imported), await storeShape(ingested)];
    expect(importedShape.events).toHaveLength(summary.stored);
    expect(importedShape).toEqual(ingestedShape);

    const again = await importJson(imported, [input], { CDS_MAX_BATCH_EVENTS: '700' });
    expect(again).toMatchObject({
      lines: lines.length,
      stored: 0,
      duplicates: 0,
      resumed: true,
      already_imported: lines.length,
    });
    expect(await storeShape(imported)).toEqual(importedShape);
  }, 120_000);

  it('imports a gzipped Segment export into the tenant and workspace it is given, keeping the events’ times', async () => {
    const dir = tempDir();
    const context = await openContext({ data_dir: dir }, 'create');
    await createTenant(context, 'acme', ['eu', 'us']);
    await putIdentifierType(context, 'acme', {
      type: 'user_id',
      tier: 'strong',
      maxPerProfile: null,
    });
    for (const name of ['identify', 'page', 'alias'])
      await putEventType(context, 'acme', name, null);
    await putEventType(context, 'acme', 'order_completed', {
      dedupEntity: 'order',
      dedupKeyPaths: ['properties.order_id'],
    });
    await context.store.close();
    const calls = [
      // An S3 export's message: receivedAt, sentAt and a timestamp already corrected by Segment.
      {
        type: 'page',
        anonymousId: 'anon-1',
        name: 'Home',
        messageId: 'ajs-1',
        timestamp: '2024-05-01T09:00:00.000Z',
        sentAt: '2024-05-01T09:00:05.000Z',
        receivedAt: '2024-05-01T09:00:01.000Z',
        writeKey: 'ignored',
      },
      {
        type: 'identify',
        userId: 'u-1',
        anonymousId: 'anon-1',
        traits: { email: 'Ada@Example.com', plan: 'pro' },
        messageId: 'ajs-2',
        timestamp: '2024-05-01T09:05:00.000Z',
      },
      // analytics-node's batch call: no messageId kept, no receivedAt.
      {
        type: 'track',
        event: 'Order Completed',
        userId: 'u-1',
        properties: { order_id: 'o-1', total: 30 },
        timestamp: '2024-05-02T10:00:00.000Z',
      },
      {
        type: 'alias',
        previousId: 'anon-2',
        userId: 'u-1',
        messageId: 'ajs-4',
        timestamp: '2024-05-03T10:00:00.000Z',
      },
      {
        type: 'page',
        anonymousId: 'anon-2',
        messageId: 'ajs-5',
        receivedAt: '2024-05-03T09:00:00.000Z',
      },
    ];
    const input = join(tempDir(), '1714550400000.8c1e2f.gz');
    writeFileSync(input, gzipSync(`${calls.map((call) => JSON.stringify(call)).join('\n')}\n`));

    const args = ['--tenant', 'acme', '--workspace', 'eu', input];
    const summary = await importJson(dir, args);
    expect(summary).toMatchObject({ lines: 5, stored: 5, rejected: 0, duplicates: 0 });
    const store = await Store.open(join(dir, 'cds.duckdb'));
    try {
      const rows = await store.read((session) =>
        session.allText<{
          workspace_id: string;
          event_name: string;
          occured_at: string;
          profiles: number;
        }>(
          `SELECT e.workspace_id, e.event_name, e.occured_at,
             count(DISTINCT coalesce(p.merged_into, e.profile_id)) OVER () AS profiles
           FROM events e LEFT JOIN profiles p
             ON p.tenant_id = e.tenant_id AND p.workspace_id = e.workspace_id AND p.profile_id = e.profile_id
           ORDER BY e.occured_at`,
        ),
      );
      expect(rows.map((row) => [row.workspace_id, row.event_name, row.occured_at])).toEqual([
        ['eu', 'page', '2024-05-01T09:00:00.000Z'],
        ['eu', 'identify', '2024-05-01T09:05:00.000Z'],
        ['eu', 'order_completed', '2024-05-02T10:00:00.000Z'],
        ['eu', 'page', '2024-05-03T09:00:00.000Z'],
        ['eu', 'alias', '2024-05-03T10:00:00.000Z'],
      ]);
      // anon-1 → u-1 by identify, anon-2 → u-1 by alias: one customer.
      expect(rows[0]?.profiles).toBe(1);
    } finally {
      await store.close();
    }
    // The message without a messageId has an id made from the file, so it is not stored twice.
    const again = await runCli([
      '--data-dir',
      dir,
      '--json',
      'import',
      '--format',
      'segment',
      ...args,
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(await eventCopies(dir)).toEqual({ events: 5, doubled: 0 });
  }, 60_000);

  it('rejects each bad line with its reason and place, and imports the rest', async () => {
    const dir = await demoDataDir();
    const good = demoLines(40);
    const event = (JSON.parse(good[0] as string) as { event: Record<string, unknown> }).event;
    const bad = [
      '{"received_at": ',
      JSON.stringify({
        received_at: '2026-03-01T12:00:00Z',
        source: 'server',
        collector_id: 'c',
        event: { ...event, id: 'x1', name: 'never_registered' },
      }),
      JSON.stringify({
        received_at: '2026-03-01T12:00:00Z',
        source: 'server',
        collector_id: 'c',
        event: { ...event, id: 'x2', workspace_id: 'nowhere' },
      }),
      JSON.stringify({
        received_at: '2026-03-01T12:00:00Z',
        source: 'browser',
        collector_id: 'c',
        event: { ...event, id: 'x3', anon_id: undefined },
      }),
      JSON.stringify({ ...event, id: 'x4', envelop_version: '2.0' }),
    ];
    const input = writeInput([...good.slice(0, 20), ...bad, ...good.slice(20)]);

    const summary = await importJson(dir, [input]);
    expect(summary.rejected_lines).toEqual([
      { file: input, line: 21, code: 'unparsable_line', message: 'line: is not one JSON object' },
      {
        file: input,
        line: 22,
        code: 'unknown_event_type',
        message: 'name: event type never_registered is not registered',
      },
      {
        file: input,
        line: 23,
        code: 'unknown_workspace',
        message: 'workspace_id: workspace nowhere does not exist',
      },
      {
        file: input,
        line: 24,
        code: 'invalid_event',
        message: 'anon_id: Invalid input: expected string, received undefined',
      },
      { file: input, line: 25, code: 'invalid_event', message: 'envelop_version: must be "1.0"' },
    ]);
    expect(summary.rejected_by_reason).toMatchObject({
      invalid_event: 2,
      unknown_event_type: 1,
      unknown_workspace: 1,
      unparsable_line: 1,
    });
    expect(summary.lines).toBe(good.length + bad.length);
    expect(summary.stored + summary.duplicates + summary.rejected).toBe(summary.lines);
    expect((await eventCopies(dir)).events).toBe(summary.stored);

    // Once the missing event type is registered, the same command imports the line refused for it.
    const context = await openContext({ data_dir: dir }, 'existing');
    await putEventType(context, DEMO_TENANT, 'never_registered', null);
    await context.store.close();
    const again = await importJson(dir, [input]);
    expect(again).toMatchObject({
      stored: 1,
      duplicates: summary.stored + summary.duplicates,
      resumed: false,
    });
    expect(again.rejected_by_reason).not.toHaveProperty('unknown_event_type');
    expect(await eventCopies(dir)).toEqual({ events: summary.stored + 1, doubled: 0 });
  }, 60_000);

  it('imports what cds generate-events writes, each event received when it happened', async () => {
    const dir = await demoDataDir();
    const input = join(tempDir(), 'generated.ndjson');
    const generated = await runCli([
      'generate-events',
      '--events',
      '200',
      '--seed',
      '3',
      '--out',
      input,
    ]);
    expect(generated.code, generated.stderr).toBe(0);
    const summary = await importJson(dir, [input]);
    expect(summary).toMatchObject({ lines: 200, quarantined: 0 });
    expect(summary.rejected_lines).toEqual([]);
    expect(summary.stored).toBeGreaterThan(150);
    const store = await Store.open(join(dir, 'cds.duckdb'));
    try {
      const [row] = await store.read((session) =>
        session.allText<{ apart: number }>(
          'SELECT count(*) FILTER (WHERE received_at <> occured_at) AS apart FROM events',
        ),
      );
      expect(row?.apart).toBe(0);
    } finally {
      await store.close();
    }
  }, 60_000);

  it('goes on after a SIGKILL where it stopped: nothing lost, nothing doubled, and says it resumed', async () => {
    const lines = demoLines(3000);
    const input = writeInput(lines);
    // Twelve chunks: the first progress line comes after the first tenth of the bytes.
    const env = { CDS_MAX_BATCH_EVENTS: '250' };
    const killed = await demoDataDir();
    const whole = await demoDataDir();

    // Off a terminal, progress comes as a line each tenth: a tenth in, the import is killed.
    const running = await startCli(
      ['--data-dir', killed, 'import', input],
      /import [1-9]\d*%/,
      60_000,
      env,
    );
    running.child.kill('SIGKILL');
    await running.stop();
    const resumed = await importJson(killed, [input], env);
    const clean = await importJson(whole, [input], env);

    expect(resumed.resumed).toBe(true);
    expect(resumed.already_imported).toBeGreaterThan(0);
    expect(resumed.already_imported).toBeLessThan(lines.length);
    expect(resumed.stored).toBeLessThan(clean.stored);
    expect(await eventCopies(killed)).toEqual({ events: clean.stored, doubled: 0 });
    expect(await storeShape(killed)).toEqual(await storeShape(whole));
  }, 180_000);

  describe('refuses, saying why', () => {
    it('a file that is not there, or a folder with nothing to import: exit 1', async () => {
      const dir = await demoDataDir();
      const missing = join(tempDir(), 'nope.ndjson');
      const absent = await runCli(['--data-dir', dir, 'import', missing]);
      expect(absent.code).toBe(1);
      expect(oneErrorLine(absent)).toBe(`cds: ${missing} does not exist`);

      const folder = tempDir();
      mkdirSync(join(folder, 'notes'));
      writeFileSync(join(folder, 'notes', 'readme.txt'), 'not history');
      const empty = await runCli(['--data-dir', dir, 'import', folder]);
      expect(empty.code).toBe(1);
      expect(oneErrorLine(empty)).toBe(
        `cds: ${folder} holds no file to import (names ending .ndjson, .jsonl, .json, or any of them .gz)`,
      );

      const throughFile = join(writeInput(demoLines(1)), 'inside');
      const notFolder = await runCli(['--data-dir', dir, 'import', throughFile]);
      expect(notFolder.code).toBe(1);
      expect(oneErrorLine(notFolder)).toBe(`cds: ${throughFile} cannot be read (ENOTDIR)`);
    }, 60_000);

    it('an unknown workspace, or a Segment export without one: exit 1 and 2', async () => {
      const dir = await demoDataDir();
      const segment = writeInput([
        JSON.stringify({ type: 'track', event: 'Signed Up', userId: 'u' }),
      ]);
      const unknown = await runCli([
        '--data-dir',
        dir,
        'import',
        '-t',
        DEMO_TENANT,
        '-w',
        'atlantis',
        segment,
      ]);
      expect(unknown.code).toBe(1);
      expect(oneErrorLine(unknown)).toBe(
        `cds: workspace atlantis of tenant ${DEMO_TENANT} does not exist (create it first: PUT /v1/tenants/${DEMO_TENANT}/workspaces/atlantis)`,
      );
      const unnamed = await runCli(['--data-dir', dir, 'import', segment]);
      expect(unnamed.code).toBe(2);
      expect(oneErrorLine(unnamed)).toBe(
        `cds: --tenant and --workspace: ${segment} holds Segment calls, whose write key names no cds workspace: give the tenant and workspace they go to`,
      );
      expect(await eventCopies(dir)).toEqual({ events: 0, doubled: 0 });
    }, 60_000);

    it('a store cds serve holds: exit 1, naming what to do', async () => {
      const dir = await demoDataDir();
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
        /cds listening on (http:\/\/\S+)/,
      );
      try {
        const held = await runCli(['--data-dir', dir, 'import', writeInput(demoLines(5))]);
        expect(held.code).toBe(1);
        expect(oneErrorLine(held)).toMatch(
          /is held by process \d+ \(.*serve.*\)\. cds import needs the store to itself: stop it/,
        );
      } finally {
        await server.stop();
      }
    }, 60_000);
  });
});
