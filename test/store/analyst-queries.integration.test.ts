import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_TENANT, DEMO_WORKSPACES, setUpDemo } from '../../src/cli/demo-setup.js';
import { openContext } from '../../src/cli/open-context.js';
import { startServer } from '../../src/cli/serve.js';
import { generateEvents } from '../../src/demo/generator.js';
import { sendToCollector } from '../../src/demo/load.js';
import { writeSnapshot } from '../../src/store/snapshot.js';
import { tempDir } from '../helpers/context.js';

const DAY_MS = 24 * 60 * 60 * 1000;
const guide = readFileSync(
  fileURLToPath(new URL('../../docs/analysts.md', import.meta.url)),
  'utf8',
);
const documentedQueries = [...guide.matchAll(/```sql\n([\s\S]*?)```/g)].map((match) =>
  (match[1] as string).trim(),
);

describe("the analysts' guide (docs/analysts.md)", () => {
  const dir = tempDir();
  const snapshotPath = join(dir, 'analysts.duckdb');

  /** Demo events of the last 30 days, through the collector and ingest, then a snapshot. */
  beforeAll(async () => {
    const context = await openContext({ data_dir: join(dir, 'data'), port: '0' });
    const tokens = await setUpDemo(context);
    const server = await startServer(context, { logRequests: false, ingest: true });
    try {
      const now = Date.now();
      await sendToCollector(
        server.url,
        tokens.collector,
        generateEvents({
          seed: 42,
          tenantId: DEMO_TENANT,
          workspaceIds: DEMO_WORKSPACES,
          events: 2_000,
          visitors: 300,
          start: new Date(now - 30 * DAY_MS),
          end: new Date(now),
        }),
      );
      await server.ingestNow();
      await writeSnapshot(context.store, snapshotPath, { replace: false });
    } finally {
      await server.close();
    }
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const query = async (sql: string) => {
    const instance = await DuckDBInstance.create(snapshotPath, { access_mode: 'READ_ONLY' });
    const connection = await instance.connect();
    try {
      return (await connection.runAndReadAll(sql)).getRowObjectsJson();
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  };

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
