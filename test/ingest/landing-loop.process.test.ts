import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEMO_TENANT } from '../../src/cli/demo-setup.js';
import type { IngestStatus } from '../../src/ingest/status.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import { demoDataDir, writeBacklog } from '../helpers/backlog.js';
import { CDS_BIN, type ChildServer, startCli } from '../helpers/cli.js';
import { logProblems } from '../helpers/log.js';
import { Receiver } from '../helpers/receiver.js';
import { waitUntil } from '../helpers/wait.js';

const LISTENING = /cds listening on (http:\/\/\S+)/;
const EVENTS = 20_000;

type Readiness = {
  ingest: IngestStatus & {
    error: string | null;
    error_since: string | null;
    failed_attempts: number;
    failing: boolean;
  };
};

/** The operator's view of `/readyz`: the counters and the raw error. */
async function readiness(server: ChildServer, dir: string): Promise<Readiness['ingest']> {
  const operator = operatorToken(readFileSync(join(dir, 'master.key')));
  const response = await fetch(`${server.url}/readyz`, {
    headers: { authorization: `Bearer ${operator}` },
  });
  return ((await response.json()) as Readiness).ingest;
}

async function waitFor(
  server: ChildServer,
  dir: string,
  done: (ingest: Readiness['ingest']) => boolean,
) {
  let ingest = await readiness(server, dir);
  await waitUntil(
    async () => {
      ingest = await readiness(server, dir);
      // Absent from a 503 answer: the server is still reading its ingest indexes.
      return ingest !== undefined && done(ingest);
    },
    'the ingest counters in /readyz',
    30_000,
  );
  return ingest;
}

describe('an ingest loop whose batches fail', () => {
  let servers: ChildServer[] = [];
  afterEach(async () => {
    for (const server of servers) await server.stop();
    servers = [];
  });
  const serve = async (dir: string, env: NodeJS.ProcessEnv = {}) => {
    const server = await startCli(
      ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
      LISTENING,
      20_000,
      env,
    );
    servers.push(server);
    return server;
  };

  it('says why in /readyz and once on stderr, keeps taking events, and loses none once it can ingest again', async () => {
    const dir = await demoDataDir();
    writeBacklog(dir, { events: EVENTS, name: 'ctest-00000001' });
    const starved = await serve(dir, { CDS_MEMORY_LIMIT: '24MB' });
    const failing = await waitFor(starved, dir, (ingest) => ingest.failed_attempts >= 2);
    expect(failing).toMatchObject({
      events_ingested: 0,
      backlog_files: 2,
      error: expect.stringMatching(/^the database ran out of memory .*lower max_batch_events/),
      error_since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    // Without the operator credential: that ingest fails, not why, nor where the database is.
    expect(await (await fetch(`${starved.url}/readyz`)).json()).toEqual({
      status: 'ready',
      ingest: { backlog_files: 2, lag_seconds: expect.any(Number), failing: true },
    });

    const sent = await fetch(`${starved.url}/v1/events`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-tenant-id': DEMO_TENANT,
        'x-workspace-id': 'brand-eu',
      },
      body: JSON.stringify({
        envelop_version: '1.0',
        id: 'sent-while-failing',
        name: 'page_viewed',
        tenant_id: DEMO_TENANT,
        workspace_id: 'brand-eu',
        anon_id: 'cookie:late-visitor',
        occured_at: '2026-03-01T13:00:00Z',
        properties: {},
      }),
    });
    expect(sent.status).toBe(202);
    expect(await starved.stop()).toBe(0);
    servers = [];
    const failures = logProblems(starved.errors()).filter((record) =>
      record.msg.startsWith('ingest failed'),
    );
    expect(failures).toEqual([
      expect.objectContaining({
        component: 'ingest',
        cause: expect.stringMatching(/^the database ran out of memory/),
      }),
    ]);

    const fed = await serve(dir);
    const drained = await waitFor(
      fed,
      dir,
      (ingest) => ingest.backlog_files === 0 && ingest.batches > 0,
    );
    expect(drained).toMatchObject({
      error: null,
      error_since: null,
      failed_attempts: 0,
      failing: false,
    });
    expect(drained.events_ingested + drained.duplicates + drained.rejected).toBe(EVENTS + 1);
  });
});

describe('cds ingest --watch', () => {
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await Receiver.start();
  });
  afterEach(() => receiver.close());

  it('ingests files as collectors seal them and sends the webhooks they cause, until SIGTERM', async () => {
    const dir = await demoDataDir();
    const secret = `whsec_${Buffer.from('a webhook secret of the test').toString('base64')}`;
    const child = spawn(process.execPath, [CDS_BIN, '--data-dir', dir, 'ingest', '--watch'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CDS_WEBHOOK_URL: receiver.url, CDS_WEBHOOK_SECRET: secret },
    });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    const exited = once(child, 'exit');
    await once(child.stderr, 'data');

    for (const round of [1, 2]) {
      const files = writeBacklog(dir, { events: 100, name: `ctest-0000000${round}` });
      await waitUntil(() => !files.some(existsSync), 'the files to be ingested', 20_000);
      expect(files.filter(existsSync)).toEqual([]);
    }
    await waitUntil(() => receiver.received.length > 0, 'a webhook');
    child.kill('SIGTERM');
    const [code] = (await exited) as [number | null];
    expect(code).toBe(0);
    expect(receiver.bodies()[0]).toMatchObject({
      type: 'segment.entered',
      data: { tenant_id: DEMO_TENANT, segment_id: expect.any(String) },
    });
    const [first] = receiver.received;
    expect(() => new Webhook(secret).verify(first?.body ?? '', first?.headers ?? {})).not.toThrow();
    expect(stdout).toMatch(
      /^Ingested 4 files, \d+ events \([\d,]+ events\/s\), \d+ duplicates, \d+ rejected\n$/,
    );
  });
});
