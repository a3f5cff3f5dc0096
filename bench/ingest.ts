import { closeSync, cpSync, mkdirSync, openSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { loadConfig } from '../src/config.js';
import { generateEvents } from '../src/demo/generator.js';
import { openDataDir } from '../src/store/data-dir.js';
import { prepareDataDir, rate, TENANT, timeCds, WORKSPACES } from './setup.js';

const FILE_BYTES = 64 * 1024 * 1024;

/** Which store stream a set of landing files holds, and the collector that wrote them. */
export interface GeneratorRun {
  seed: number;
  start: Date;
  /** Names the files, so streams written into one landing dir never share a path. */
  collector: string;
}

const DEFAULT_RUN: GeneratorRun = {
  seed: 7,
  start: new Date('2026-01-01T00:00:00Z'),
  collector: 'cbench',
};

export interface LandingFile {
  path: string;
  lines: number;
}

/** Writes the stream as sealed landing files, as collectors would have (design §2). */
export function writeLandingFiles(
  landing: string,
  events: number,
  stream: GeneratorRun = DEFAULT_RUN,
): { files: LandingFile[]; bytes: number } {
  const open = new Map<string, { fd: number; bytes: number; seq: number; file: LandingFile }>();
  const files: LandingFile[] = [];
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
      const path = join(dir, `${stream.collector}-${String(seq).padStart(8, '0')}.ndjson`);
      const landed = { path, lines: 0 };
      files.push(landed);
      file = { fd: openSync(path, 'w'), bytes: 0, seq, file: landed };
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
    file.file.lines += lines.length;
    total += data.length;
    buffers.set(workspace, []);
  };
  for (const { source, event } of generateEvents({
    seed: stream.seed,
    tenantId: TENANT,
    workspaceIds: WORKSPACES,
    events,
    visitors: Math.max(100, Math.floor(events / 10)),
    start: stream.start,
  })) {
    const lines = buffers.get(event.workspace_id) ?? [];
    lines.push(
      `{"received_at":"${receivedAt}","source":"${source}","collector_id":"${stream.collector}","event":${JSON.stringify(event)}}\n`,
    );
    buffers.set(event.workspace_id, lines);
    if (lines.length >= 10_000) flush(event.workspace_id);
  }
  for (const workspace of WORKSPACES) flush(workspace);
  for (const file of open.values()) closeSync(file.fd);
  return { files, bytes: total };
}

/** The rows the `events` table of a bench database holds, then the database closed. */
async function countEventsAndClose(
  instance: DuckDBInstance,
  connection: DuckDBConnection,
): Promise<number> {
  const reader = await connection.runAndReadAll('SELECT count(*) AS n FROM events');
  const rows = Number(reader.getRowObjectsJS()[0]?.n);
  connection.closeSync();
  instance.closeSync();
  return rows;
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
 * The bare store under any ingest into a database file: the lines parsed and stored as rows of
 * the events table's columns, then checkpointed, with nothing checked, keyed, resolved or counted.
 */
async function rawStore(files: string[], dir: string): Promise<{ seconds: number; rows: number }> {
  const instance = await DuckDBInstance.create(join(dir, 'bare-store.duckdb'));
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
  const rows = await countEventsAndClose(instance, connection);
  rmSync(join(dir, 'bare-store.duckdb'));
  return { seconds, rows };
}

/**
 * The files in path order, cut into batches as `cds ingest` cuts them (`LandingLoop.nextBatch`):
 * whole files, about `max_batch_events` lines a batch, here counted rather than estimated.
 */
function inBatches(files: LandingFile[], maxBatchEvents: number): string[][] {
  const batches: string[][] = [];
  let batch: string[] = [];
  let lines = 0;
  for (const file of [...files].sort((a, b) => (a.path < b.path ? -1 : 1))) {
    if (batch.length > 0 && lines + file.lines > maxBatchEvents) {
      batches.push(batch);
      batch = [];
      lines = 0;
    }
    batch.push(file.path);
    lines += file.lines;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

/**
 * One micro-batch of the ingest floor (issue 37; docs/decisions.md glossary): every line parsed,
 * checked (required fields, a known workspace and event type, occured_at a time), given the event
 * type's dedup key and hash as cds gives them (FLOOR_CHECK), and stored unless a stored event or
 * an earlier line of the batch holds its hash (FLOOR_STORE; two statements, as only a text's last
 * statement takes parameters). Identifiers are taken out of the stored properties, as a stored
 * event may not hold them; no identity is resolved, so profile_id is empty and no key is stored.
 */
const FLOOR_CHECK = `
CREATE TEMP TABLE floor_checked AS
SELECT tenant_id, workspace_id, event_id, event_name, source, occured_at, received_at, properties, dedup_key,
  md5_number(tenant_id || '/' || workspace_id || '/' || event_name || '/' || dedup_key) AS dedup_hash
FROM (
  SELECT *,
    CASE
      WHEN event_type.paths IS NULL THEN 'id:' || event_id
      ELSE event_type.entity || ':' || to_json(
        list_transform(event_type.paths, path -> coalesce(json_extract_string(properties, path), '')))::VARCHAR
    END AS dedup_key
  FROM (
    SELECT try_cast(r.received_at AS TIMESTAMP) AS received_at, r.source, r.event.envelop_version AS envelop_version,
      r.event.id AS event_id, r.event.name AS event_name, r.event.tenant_id AS tenant_id,
      r.event.workspace_id AS workspace_id, try_cast(r.event.occured_at AS TIMESTAMP) AS occured_at,
      r.event.properties AS properties,
      list_contains(CAST($workspaces AS JSON)::VARCHAR[], r.event.tenant_id || '/' || r.event.workspace_id) AS known_workspace,
      (CAST($event_types AS JSON)::MAP(VARCHAR, STRUCT(entity VARCHAR, paths VARCHAR[])))[r.event.tenant_id || '/' || r.event.name]
        AS event_type
    FROM read_json(CAST($files AS JSON)::VARCHAR[], format = 'newline_delimited', ignore_errors = true, columns = {
      received_at: 'VARCHAR', source: 'VARCHAR',
      event: 'STRUCT(envelop_version VARCHAR, id VARCHAR, name VARCHAR, tenant_id VARCHAR, workspace_id VARCHAR, occured_at VARCHAR, properties JSON)'
    }) r
  )
  WHERE event_id IS NOT NULL AND received_at IS NOT NULL AND source IN ('browser', 'server')
    AND envelop_version = '1.0' AND known_workspace AND event_type IS NOT NULL AND occured_at IS NOT NULL
)`;
const FLOOR_STORE = `
INSERT INTO events (tenant_id, workspace_id, event_id, event_name, dedup_key, dedup_hash, profile_id, source,
  occured_at, received_at, properties, identifier_keys, ingested_at)
SELECT c.tenant_id, c.workspace_id, c.event_id, c.event_name, c.dedup_key, c.dedup_hash, '', c.source,
  c.occured_at, c.received_at,
  CASE WHEN json_exists(c.properties, '$.identifiers') THEN json_merge_patch(c.properties, '{"identifiers":null}')
       ELSE coalesce(c.properties, '{}'::JSON) END,
  []::VARCHAR[], now()::TIMESTAMP
FROM floor_checked c SEMI JOIN (
  SELECT min(n.rowid) AS seq FROM floor_checked n ANTI JOIN events e ON e.dedup_hash = n.dedup_hash
  GROUP BY n.dedup_hash
) f ON f.seq = c.rowid;
DROP TABLE floor_checked`;

/**
 * The ingest floor over a fresh cds database (its real `events` table, tenant, workspaces and
 * event types), opened as the store opens it: batches cut as cds cuts them, each in a transaction
 * followed by a CHECKPOINT.
 */
async function ingestFloor(
  files: LandingFile[],
  maxBatchEvents: number,
): Promise<{ seconds: number; rows: number; batches: number }> {
  const { dir } = await prepareDataDir();
  const path = openDataDir(dir).databasePath;
  const instance = await DuckDBInstance.create(path, {
    temp_directory: '',
    checkpoint_threshold: '1TB',
  });
  const connection = await instance.connect();
  const catalog = await connection.runAndReadAll(
    `SELECT
       (SELECT list(tenant_id || '/' || workspace_id) FROM workspaces)::JSON::VARCHAR AS workspaces,
       (SELECT json_group_object(tenant_id || '/' || event_name, json_object(
          'entity', dedup_entity, 'paths', list_transform(dedup_key_paths, path -> '$.' || path[12:])))
        FROM event_types)::VARCHAR AS event_types`,
  );
  const { workspaces, event_types } = catalog.getRowObjectsJS()[0] as {
    workspaces: string;
    event_types: string;
  };
  const batches = inBatches(files, maxBatchEvents);
  const started = performance.now();
  for (const batch of batches) {
    await connection.run('BEGIN TRANSACTION');
    await connection.run(FLOOR_CHECK, { files: JSON.stringify(batch), workspaces, event_types });
    await connection.run(FLOOR_STORE);
    await connection.run('COMMIT');
    await connection.run('CHECKPOINT');
  }
  const seconds = (performance.now() - started) / 1000;
  const rows = await countEventsAndClose(instance, connection);
  return { seconds, rows, batches: batches.length };
}

export async function benchIngest(events: number): Promise<void> {
  console.log(`\n## ingest: ${events.toLocaleString('en')} events`);
  const { dir } = await prepareDataDir();
  const landing = join(dir, 'landing');
  const written = writeLandingFiles(landing, events);
  const paths = written.files.map((file) => file.path);
  console.log(
    `landing files: ${paths.length} files, ${(written.bytes / 1024 / 1024).toFixed(0)} MiB`,
  );

  const raw = await rawReadJson(paths);
  console.log(
    `(a) DuckDB read_json raw load: ${raw.seconds.toFixed(2)} s, ${rate(raw.rows, raw.seconds)}`,
  );

  const stored = await rawStore(paths, dir);
  console.log(
    `(a2) read_json stored as event rows in a database file, checkpointed: ${stored.seconds.toFixed(2)} s, ${rate(stored.rows, stored.seconds)}`,
  );

  // The batch size cds ingest takes in (b), from the same environment.
  const { max_batch_events: maxBatchEvents } = loadConfig({ data_dir: dir }, process.env);
  const floor = await ingestFloor(written.files, maxBatchEvents);
  console.log(
    `(f) ingest floor, DuckDB only: parse, check, hash-dedup, store as events, CHECKPOINT per batch (${floor.batches} of <= ${maxBatchEvents.toLocaleString('en')} lines): ${floor.seconds.toFixed(2)} s, ${rate(floor.rows, floor.seconds)} (${floor.rows.toLocaleString('en')} stored)`,
  );

  const bounded = await prepareDataDir();
  cpSync(landing, join(bounded.dir, 'landing'), { recursive: true });

  const run = await ingestAll(dir, {});
  console.log(`(b) cds ingest end to end, defaults: ${run.summary}`);
  console.log(
    `ratio cds / floor: ${(floor.seconds / run.seconds).toFixed(2)} (target >= 0.5, issue 37)`,
  );
  console.log(
    `ratio cds / raw read_json: ${(raw.seconds / run.seconds).toFixed(2)} (target >= 0.12, issue 37)`,
  );
  console.log(
    `cds peak RSS: ${run.maxRssMiB.toFixed(0)} MiB (target <= 1,024 MiB at 5M events, issue 37)`,
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
): Promise<{ seconds: number; maxRssMiB: number; summary: string }> {
  const run = await timeCds(['--data-dir', dir, '--json', 'ingest'], env);
  const totals = JSON.parse(run.stdout) as {
    batches: number;
    events: number;
    duplicates: number;
    rejected: number;
  };
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
    maxRssMiB: run.maxRssMiB,
    summary: `${run.seconds.toFixed(2)} s, ${rate(handled, run.seconds)}, ${run.cpuSeconds.toFixed(1)} s CPU (${totals.batches} batches, ${totals.events.toLocaleString('en')} stored, ${totals.duplicates} duplicates, ${totals.rejected} rejected), peak RSS ${run.maxRssMiB.toFixed(0)} MiB`,
  };
}
