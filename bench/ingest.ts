import { closeSync, cpSync, mkdirSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { generateEvents } from '../src/demo/generator.js';
import { prepareDataDir, rate, TENANT, timeCds, WORKSPACES } from './setup.js';

const FILE_BYTES = 64 * 1024 * 1024;

/** Writes the stream as sealed landing files, as collectors would have (design §2). */
export function writeLandingFiles(
  landing: string,
  events: number,
): { files: string[]; bytes: number } {
  const open = new Map<string, { fd: number; bytes: number; seq: number; dir: string }>();
  const files: string[] = [];
  let total = 0;
  const receivedAt = '2026-03-01T12:00:00.000Z';
  const fileFor = (workspace: string) => {
    let file = open.get(workspace);
    if (!file || file.bytes >= FILE_BYTES) {
      if (file) closeSync(file.fd);
      const dir = join(
        landing,
        `tenant=${TENANT}`,
        `workspace=${workspace}`,
        'date=2026-03-01',
        'hour=12',
      );
      mkdirSync(dir, { recursive: true });
      const seq = (file?.seq ?? 0) + 1;
      const path = join(dir, `cbench-${String(seq).padStart(8, '0')}.ndjson`);
      files.push(path);
      file = { fd: openSync(path, 'w'), bytes: 0, seq, dir };
      open.set(workspace, file);
    }
    return file;
  };
  const buffers = new Map<string, string[]>();
  const flush = (workspace: string) => {
    const lines = buffers.get(workspace) ?? [];
    if (lines.length === 0) return;
    const file = fileFor(workspace);
    const data = Buffer.from(lines.join(''));
    writeSync(file.fd, data);
    file.bytes += data.length;
    total += data.length;
    buffers.set(workspace, []);
  };
  for (const { source, event } of generateEvents({
    seed: 7,
    tenantId: TENANT,
    workspaceIds: WORKSPACES,
    events,
    visitors: Math.max(100, Math.floor(events / 10)),
    start: new Date('2026-01-01T00:00:00Z'),
  })) {
    const lines = buffers.get(event.workspace_id) ?? [];
    lines.push(
      `{"received_at":"${receivedAt}","source":"${source}","collector_id":"cbench","event":${JSON.stringify(event)}}\n`,
    );
    buffers.set(event.workspace_id, lines);
    if (lines.length >= 10_000) flush(event.workspace_id);
  }
  for (const workspace of WORKSPACES) flush(workspace);
  for (const file of open.values()) closeSync(file.fd);
  return { files, bytes: total };
}

async function rawReadJson(files: string[]): Promise<{ seconds: number; rows: number }> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const started = performance.now();
  await connection.run(
    `CREATE TABLE raw AS SELECT * FROM read_json(CAST($files AS JSON)::VARCHAR[], format = 'newline_delimited')`,
    { files: JSON.stringify(files) },
  );
  const seconds = (performance.now() - started) / 1000;
  const reader = await connection.runAndReadAll('SELECT count(*) AS n FROM raw');
  const rows = Number(reader.getRowObjectsJS()[0]?.n);
  connection.closeSync();
  instance.closeSync();
  return { seconds, rows };
}

/**
 * The floor under any ingest into a database file: the lines parsed and stored as rows of the
 * events table's columns, then checkpointed, with nothing checked, keyed, resolved or counted.
 */
async function rawStore(files: string[], dir: string): Promise<{ seconds: number; rows: number }> {
  const instance = await DuckDBInstance.create(join(dir, 'floor.duckdb'));
  const connection = await instance.connect();
  const started = performance.now();
  await connection.run(
    `CREATE TABLE events AS
     SELECT r.event.tenant_id, r.event.workspace_id, r.event.id AS event_id, r.event.name AS event_name, r.source,
       r.event.occured_at::TIMESTAMP AS occured_at, r.received_at::TIMESTAMP AS received_at, r.event.properties
     FROM read_json(CAST($files AS JSON)::VARCHAR[], format = 'newline_delimited', columns = {
       received_at: 'VARCHAR', source: 'VARCHAR',
       event: 'STRUCT(id VARCHAR, name VARCHAR, tenant_id VARCHAR, workspace_id VARCHAR, occured_at VARCHAR, properties JSON)'
     }) r`,
    { files: JSON.stringify(files) },
  );
  await connection.run('CHECKPOINT');
  const seconds = (performance.now() - started) / 1000;
  const reader = await connection.runAndReadAll('SELECT count(*) AS n FROM events');
  const rows = Number(reader.getRowObjectsJS()[0]?.n);
  connection.closeSync();
  instance.closeSync();
  rmSync(join(dir, 'floor.duckdb'));
  return { seconds, rows };
}

export async function benchIngest(events: number): Promise<void> {
  console.log(`\n## ingest: ${events.toLocaleString('en')} events`);
  const { dir } = await prepareDataDir();
  const landing = join(dir, 'landing');
  const written = writeLandingFiles(landing, events);
  const lines = written.files.length;
  console.log(`landing files: ${lines} files, ${(written.bytes / 1024 / 1024).toFixed(0)} MiB`);

  const raw = await rawReadJson(written.files);
  console.log(
    `(a) DuckDB read_json raw load: ${raw.seconds.toFixed(2)} s, ${rate(raw.rows, raw.seconds)}`,
  );

  const stored = await rawStore(written.files, dir);
  console.log(
    `(a2) read_json stored as event rows in a database file, checkpointed: ${stored.seconds.toFixed(2)} s, ${rate(stored.rows, stored.seconds)}`,
  );

  const bounded = await prepareDataDir();
  cpSync(landing, join(bounded.dir, 'landing'), { recursive: true });

  const run = await ingestAll(dir, {});
  console.log(`(b) cds ingest end to end, defaults: ${run.summary}`);
  console.log(
    `ratio cds / raw read_json: ${(raw.seconds / run.seconds).toFixed(2)} (target: cds >= 200,000 events/s, peak RSS <= 1 GiB for 5M)`,
  );
  const small = await ingestAll(bounded.dir, BOUNDED_MEMORY);
  const settings = Object.entries(BOUNDED_MEMORY)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ');
  console.log(`(c) cds ingest, ${settings}: ${small.summary}`);
}

/** The settings docs/decisions.md gives for a 5M-event backlog in 1 GiB ("Memory limit and batch size"). */
const BOUNDED_MEMORY = {
  CDS_MAX_BATCH_EVENTS: '50000',
  CDS_MEMORY_LIMIT: '400MB',
  NODE_OPTIONS: '--max-old-space-size=256',
};

/** `cds ingest` over a data dir's whole backlog, as a child process, described in one line. */
async function ingestAll(
  dir: string,
  env: NodeJS.ProcessEnv,
): Promise<{ seconds: number; summary: string }> {
  const run = await timeCds(['--data-dir', dir, '--json', 'ingest'], env);
  const totals = JSON.parse(run.stdout) as { events: number; duplicates: number; rejected: number };
  const handled = totals.events + totals.duplicates + totals.rejected;
  if (
    readdirSync(join(dir, 'landing'), { recursive: true }).some((name) =>
      String(name).endsWith('.ndjson'),
    )
  ) {
    throw new Error('landing files left after ingest');
  }
  return {
    seconds: run.seconds,
    summary: `${run.seconds.toFixed(2)} s, ${rate(handled, run.seconds)} (${totals.events.toLocaleString('en')} stored, ${totals.duplicates} duplicates, ${totals.rejected} rejected), peak RSS ${run.maxRssMiB.toFixed(0)} MiB`,
  };
}
