import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TENANT, DEMO_WORKSPACES, setUpDemo } from '../../src/cli/demo-setup.js';
import { openContext } from '../../src/cli/open-context.js';
import { startServer } from '../../src/cli/serve.js';
import { type GeneratedEvent, generateEvents } from '../../src/demo/generator.js';
import { sendToCollector } from '../../src/demo/load.js';
import { ANALYST_TABLES } from '../../src/store/analyst-views.js';
import { writeSnapshot } from '../../src/store/snapshot.js';
import { putWorkspace } from '../../src/tenancy/workspaces.js';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/temp-dirs.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const guide = readFileSync(
  fileURLToPath(new URL('../../docs/analysts.md', import.meta.url)),
  'utf8',
);
const guideQueries = [...guide.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) =>
  (match[1] as string).trim(),
);
/** The guide's queries of an export read `export/…`; the others a snapshot. */
const EXPORT_PATH = "'export/";
const documentedQueries = guideQueries.filter((sql) => !sql.includes(EXPORT_PATH));
const exportQueries = guideQueries.filter((sql) => sql.includes(EXPORT_PATH));
/** Ids the id rule allows that a folder name or a type guess could get wrong. */
const ODD_WORKSPACES = ['007', 'a_b-c'];

/**
 * Column types pandas (`.df()`) and Arrow (`.arrow()`) take as they are: no HUGEINT/UHUGEINT
 * (no 128-bit integer in either), no INTERVAL, UNION, BLOB, ENUM or time without a zone.
 */
const READABLE_TYPES = new Set([
  'VARCHAR',
  'JSON',
  'BOOLEAN',
  'INTEGER',
  'BIGINT',
  'DOUBLE',
  'DATE',
  'TIMESTAMP WITH TIME ZONE',
]);

function readable(type: string): boolean {
  if (type.endsWith('[]')) return readable(type.slice(0, -2));
  const decimal = /^DECIMAL\((\d+),\d+\)$/.exec(type);
  if (decimal) return Number(decimal[1]) <= 38;
  return READABLE_TYPES.has(type);
}

async function duckdb<T = Record<string, unknown>>(sql: string, path = ':memory:'): Promise<T[]> {
  const instance = await DuckDBInstance.create(
    path,
    path === ':memory:' ? {} : { access_mode: 'READ_ONLY' },
  );
  const connection = await instance.connect();
  try {
    return (await connection.runAndReadAll(sql)).getRowObjectsJson() as T[];
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path).isFile());
}

const dir = tempDir();
const dataDir = join(dir, 'data');
const snapshotPath = join(dir, 'analysts.duckdb');
const servedExport = join(dir, 'export-served');
const fileExport = join(dir, 'export-file');
let sent: GeneratedEvent[] = [];
let servedRun = { code: -1, stdout: '', stderr: '' };

/**
 * Demo events of the last 30 days (two more workspaces with odd ids), through the collector and
 * ingest; then a snapshot, an export through the running server, and one from the data dir.
 */
beforeAll(async () => {
  const context = await openContext({ data_dir: dataDir, port: '0' }, 'create');
  const tokens = await setUpDemo(context);
  for (const workspace of ODD_WORKSPACES) {
    await putWorkspace(context, DEMO_TENANT, workspace, {
      displayName: null,
      allowedOrigins: null,
      consentCategories: null,
      consentDefault: null,
    });
  }
  const server = await startServer(context, { logRequests: false, ingest: true });
  try {
    const now = Date.now();
    sent = [
      ...generateEvents({
        seed: 42,
        tenantId: DEMO_TENANT,
        workspaceIds: [...DEMO_WORKSPACES, ...ODD_WORKSPACES],
        events: 2_000,
        visitors: 300,
        start: new Date(now - 30 * DAY_MS),
        end: new Date(now),
      }),
    ];
    await sendToCollector(server.url, tokens.collector, sent);
    await server.ingestNow();
    await writeSnapshot(context.store, snapshotPath, { replace: false });
    servedRun = await cdsInProcess([
      '--data-dir',
      dataDir,
      '--server',
      server.url,
      'export',
      '--format',
      'parquet',
      servedExport,
    ]);
  } finally {
    await server.close();
  }
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the analysts' guide (docs/analysts.md)", () => {
  const query = (sql: string) => duckdb(sql, snapshotPath);

  it('has queries to run', () => {
    expect(documentedQueries.length).toBeGreaterThanOrEqual(5);
  });

  it.each(documentedQueries.map((sql) => [sql.split('\n')[0], sql]))(
    'answers with rows: %s',
    async (_first, sql) => {
      expect((await query(sql as string)).length).toBeGreaterThan(0);
    },
  );

  it('finds demo customers active on most days of the month the events span', async () => {
    const [daily] = documentedQueries.filter((sql) => sql.includes('active_customers'));
    const days = new Set((await query(daily as string)).map((row) => String(row.day)));
    expect(days.size).toBeGreaterThan(25);
  });
});

describe("the snapshot's column types", () => {
  const columnsOf = async (table: string) =>
    duckdb<{ column_name: string; column_type: string }>(`DESCRIBE ${table}`, snapshotPath);

  it.each(ANALYST_TABLES)('%s: every column is a type pandas and Arrow read', async (table) => {
    const columns = await columnsOf(table);
    expect(columns.length).toBeGreaterThan(0);
    expect(columns.filter((column) => !readable(column.column_type))).toEqual([]);
  });

  it.each(ANALYST_TABLES)('%s: every time is a TIMESTAMP WITH TIME ZONE', async (table) => {
    const times = (await columnsOf(table)).filter((column) =>
      column.column_type.startsWith('TIMESTAMP'),
    );
    expect(times.length).toBeGreaterThan(0);
    for (const column of times) {
      expect(column, column.column_name).toMatchObject({
        column_type: 'TIMESTAMP WITH TIME ZONE',
      });
      expect(column.column_name).toMatch(/_at$/);
    }
  });

  it('keeps no ingest internals in events, and times the instant the event was sent', async () => {
    const names = (await columnsOf('events')).map((column) => column.column_name);
    expect(names).not.toContain('dedup_hash');
    const [event] = sent.filter((generated) => generated.source === 'server');
    const [row] = await duckdb<{ utc: string }>(
      `SELECT strftime(occured_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%gZ') AS utc
       FROM events WHERE event_id = '${event?.event.id}'`,
      snapshotPath,
    );
    expect(row?.utc).toBe(event?.event.occured_at);
  });
});

describe('cds export --format parquet', () => {
  const parquet = (root: string, table: string) =>
    table === 'events'
      ? `read_parquet('${root}/events/**/*.parquet', hive_partitioning = true, hive_types = {'tenant_id': VARCHAR, 'workspace_id': VARCHAR, 'date': DATE})`
      : `read_parquet('${root}/${table}.parquet')`;

  it('writes through a running server, into a folder only its user may open', () => {
    expect(servedRun.code, servedRun.stderr).toBe(0);
    expect(servedRun.stderr).toMatch(/^export done in \d+s: profiles \d+, /);
    expect(statSync(servedExport).mode & 0o777).toBe(0o700);
    expect(servedRun.stdout).toMatch(
      new RegExp(`^Wrote ${servedExport} \\(parquet\\): profiles \\d+, .*events \\d+\\n$`),
    );
  });

  it('writes from the data dir, with the same rows as the snapshot, table by table', async () => {
    const written = await cdsInProcess(['--data-dir', dataDir, '--json', 'export', fileExport]);
    expect(written.code, written.stderr).toBe(0);
    const answer = JSON.parse(written.stdout) as { dir: string; rows: Record<string, number> };
    expect(answer.dir).toBe(fileExport);
    for (const table of ANALYST_TABLES) {
      const [inSnapshot] = await duckdb<{ n: string }>(
        `SELECT count(*) AS n FROM ${table}`,
        snapshotPath,
      );
      for (const root of [fileExport, servedExport]) {
        const [exported] = await duckdb<{ n: string }>(
          `SELECT count(*) AS n FROM ${parquet(root, table)}`,
        );
        expect(exported?.n, `${root} ${table}`).toBe(inSnapshot?.n);
      }
      expect(answer.rows[table]).toBe(Number(inSnapshot?.n));
    }
  });

  it('keeps one file per table and the events by tenant, workspace and UTC day', async () => {
    const files = filesUnder(servedExport).map((path) => relative(servedExport, path));
    const tables = files.filter((path) => !path.startsWith('events/'));
    expect(tables.sort()).toEqual(
      ANALYST_TABLES.filter((table) => table !== 'events')
        .map((table) => `${table}.parquet`)
        .sort(),
    );
    const events = files.filter((path) => path.startsWith('events/'));
    const layout =
      /^events\/tenant_id=demo\/workspace_id=([a-z0-9_-]+)\/date=(\d{4}-\d{2}-\d{2})\/[^/]+\.parquet$/;
    expect(events.filter((path) => !layout.test(path))).toEqual([]);
    const workspaces = new Set(events.map((path) => layout.exec(path)?.[1]));
    expect([...workspaces].sort()).toEqual([...DEMO_WORKSPACES, ...ODD_WORKSPACES].sort());
    const days = new Set(events.map((path) => layout.exec(path)?.[2]));
    expect(days.size).toBeGreaterThan(25);
    const misplaced = await duckdb(
      `SELECT workspace_id, date FROM ${parquet(servedExport, 'events')}
       WHERE date <> CAST(occured_at AT TIME ZONE 'UTC' AS DATE)
         OR workspace_id NOT IN ('brand-eu', 'brand-us', '007', 'a_b-c')`,
    );
    expect(misplaced).toEqual([]);
  });

  it.each(ANALYST_TABLES)('%s: reads back with the types of the snapshot', async (table) => {
    const described = async (source: string, path?: string) =>
      (await duckdb<{ column_name: string; column_type: string }>(`DESCRIBE ${source}`, path))
        .map((column) => `${column.column_name} ${column.column_type}`)
        .sort();
    const exported = await described(`SELECT * FROM ${parquet(servedExport, table)}`);
    const snapshot = await described(table, snapshotPath);
    expect(exported).toEqual(table === 'events' ? [...snapshot, 'date DATE'].sort() : snapshot);
  });

  it('holds no plain email or phone that was sent, in its bytes or its values', async () => {
    const plain = new Set<string>();
    for (const { event } of sent) {
      const identifiers = (event.properties.identifiers ?? {}) as Record<string, string>;
      if (identifiers.email?.includes('@')) plain.add(identifiers.email.trim().toLowerCase());
      if (identifiers.phone) {
        plain.add(identifiers.phone);
        plain.add(`+91${identifiers.phone}`);
      }
    }
    expect(plain.size).toBeGreaterThan(20);
    const files = filesUnder(servedExport);
    for (const path of files) {
      const bytes = readFileSync(path).toString('latin1');
      expect(
        [...plain].filter((value) => bytes.includes(value)),
        path,
      ).toEqual([]);
    }
    for (const table of ANALYST_TABLES) {
      const rows = await duckdb<{ row: string }>(
        `SELECT to_json(t)::VARCHAR AS row FROM ${parquet(servedExport, table)} t`,
      );
      const text = rows.map((row) => row.row).join('\n');
      if (table === 'events') expect(text).toContain(sent[0]?.event.id);
      expect(
        [...plain].filter((value) => text.includes(value)),
        table,
      ).toEqual([]);
    }
  });

  it("answers the guide's export queries with every event", async () => {
    expect(exportQueries.length).toBeGreaterThan(0);
    const [stored] = await duckdb<{ n: string }>('SELECT count(*) AS n FROM events', snapshotPath);
    for (const sql of exportQueries) {
      const rows = await duckdb<{ workspace_id: string }>(
        sql.replaceAll(EXPORT_PATH, `'${servedExport}/`),
      );
      expect(rows.length).toBe(Number(stored?.n));
      expect(new Set(rows.map((row) => row.workspace_id))).toContain('007');
    }
  });

  it('refuses a folder that is not empty, and a format it does not write', async () => {
    const full = await cdsInProcess(['--data-dir', dataDir, 'export', fileExport]);
    expect(full).toMatchObject({
      code: 1,
      stderr: `cds: dir: ${fileExport} is not empty; name a new or empty folder\n`,
    });
    const csv = await cdsInProcess([
      '--data-dir',
      dataDir,
      'export',
      '--format',
      'csv',
      join(dir, 'x'),
    ]);
    expect(csv.code).toBe(2);
    expect(csv.stderr).toMatch(
      /^error: option '--format <format>' argument 'csv' is invalid\. Allowed choices are parquet\.\n/,
    );
    expect(readdirSync(dir).filter((name) => name.startsWith('.cds-export-'))).toEqual([]);
  });
});
