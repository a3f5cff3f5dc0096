import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { DEMO_TENANT, setUpDemo } from '../../src/cli/demo-setup.js';
import { openContext } from '../../src/cli/open-context.js';
import { openEmbeddedCollector } from '../../src/collector/runtime.js';
import { CDS_BIN, runCli, startCli } from '../helpers/cli.js';
import { demoVisit, VisitSender } from '../helpers/demo-visits.js';
import { logProblems } from '../helpers/log.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

/** Landing files may not grow past this under the collector's file-size limit (`ulimit -f`). */
const FILE_LIMIT_KIB = 64;

/**
 * `cds collect` with a file-size limit and SIGXFSZ ignored, as a shell would start it: a write
 * that reaches the limit is cut short, and the writes after it fail with EFBIG. This is what a
 * full disk does to a landing file, without needing one.
 */
async function startLimitedCollector(dir: string) {
  const child = spawn(
    'bash',
    [
      '-c',
      `trap '' XFSZ; ulimit -f ${FILE_LIMIT_KIB}; exec "$0" "$@"`,
      process.execPath,
      CDS_BIN,
      '--data-dir',
      dir,
      'collect',
      '--port',
      '0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  // The listening address is a record of the log, on stderr.
  let stderr = '';
  for await (const chunk of child.stderr) {
    stderr += String(chunk);
    const url = /cds collector listening on (http:\/\/\S+)/.exec(stderr)?.[1];
    if (url) return { child, url };
  }
  throw new Error(`cds collect did not start: ${stderr}`);
}

const visit = (id: string) => demoVisit(id, 200);

describe('a landing file the disk stops taking', () => {
  it('answers 503, keeps no torn line, and every event it acknowledged is stored once', async () => {
    const dir = tempDir();
    const context = await openContext({ data_dir: dir }, 'create');
    await setUpDemo(context);
    await (await openEmbeddedCollector(context)).close();
    await context.store.close();

    const { child, url } = await startLimitedCollector(dir);
    const sender = new VisitSender(url, 200);
    for (let request = 0; request < 12; request += 1) {
      await sender.send(Array.from({ length: 40 }, (_, index) => `r${request}-e${index}`));
    }
    const { acknowledged, refusals } = sender;
    child.kill('SIGTERM');
    expect((await once(child, 'exit'))[0]).toBe(0);

    expect(refusals.length).toBeGreaterThan(0);
    for (const refusal of refusals) {
      expect(refusal).toMatchObject({
        status: 503,
        body: {
          error: {
            code: 'landing_write_failed',
            message: expect.stringMatching(/^the collector could not write the events to disk/),
          },
        },
      });
    }
    // After a failed write the partition starts a new file, so later requests get through.
    expect(acknowledged.length).toBeGreaterThan(4 * 40);

    const ingested = await runCli(['--data-dir', dir, '--json', 'ingest']);
    expect(ingested.code, ingested.stderr).toBe(0);
    const status = await runCli(['--data-dir', dir, '--json', 'ingest', '--status']);
    expect(JSON.parse(status.stdout)).toMatchObject({ unparsable_lines: 0, backlog_files: 0 });

    const instance = await DuckDBInstance.create(join(dir, 'cds.duckdb'), {
      access_mode: 'READ_ONLY',
    });
    const connection = await instance.connect();
    const stored = (await connection.runAndReadAll('SELECT event_id FROM events'))
      .getRowObjectsJson()
      .map((row) => String(row.event_id));
    connection.closeSync();
    instance.closeSync();
    expect(new Set(stored).size).toBe(stored.length);
    expect(stored.filter((id) => acknowledged.includes(id)).sort()).toEqual(
      [...acknowledged].sort(),
    );
  });

  it('logs which file it could not seal, and goes on taking and sealing events', async () => {
    const dir = tempDir();
    const context = await openContext({ data_dir: dir }, 'create');
    await setUpDemo(context);
    await (await openEmbeddedCollector(context)).close();
    await context.store.close();
    const collector = await startCli(
      ['--data-dir', dir, 'collect', '--port', '0'],
      /cds collector listening on (http:\/\/\S+)/,
      20_000,
      { CDS_LANDING_MAX_AGE_MS: '300' },
    );
    const send = (id: string) =>
      fetch(`${collector.url}/v1/events`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-tenant-id': DEMO_TENANT,
          'x-workspace-id': 'brand-eu',
        },
        body: JSON.stringify(visit(id)),
      });
    const landing = join(dir, 'landing');
    const files = (suffix: string) =>
      readdirSync(landing, { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile() && entry.name.endsWith(suffix))
        .map((entry) => join(entry.parentPath, entry.name));
    try {
      expect((await send('blocked')).status).toBe(202);
      const [open] = files('.ndjson.open');
      // A folder where the sealed file should go makes the rename fail.
      mkdirSync(join((open as string).slice(0, -'.open'.length), 'in-the-way'), {
        recursive: true,
      });
      await waitUntil(
        () => collector.errors().includes('could not seal'),
        'the seal failure to be reported',
      );
      expect(logProblems(collector.errors())).toContainEqual(
        expect.objectContaining({
          level: 50,
          component: 'collector',
          path: open,
          msg: expect.stringContaining('could not seal a landing file'),
          err: expect.objectContaining({ message: expect.stringContaining('EISDIR') }),
        }),
      );
      expect(readFileSync(open as string, 'utf8')).toContain('"blocked"');

      expect((await send('after')).status).toBe(202);
      await waitUntil(() => files('.ndjson').length > 0, 'the next file to be sealed');
      expect(readFileSync(files('.ndjson')[0] as string, 'utf8')).toContain('"after"');
    } finally {
      await collector.stop();
    }
  });
});
