import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { DEMO_TENANT, setUpDemo } from '../../src/cli/demo-setup.js';
import { openContext } from '../../src/cli/open-context.js';
import { openEmbeddedCollector } from '../../src/collector/runtime.js';
import { Store } from '../../src/store/database.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import { runCli, startCli } from '../helpers/cli.js';
import { VisitSender } from '../helpers/demo-visits.js';
import { logProblems } from '../helpers/log.js';
import { mountSmallDisk } from '../helpers/small-disk.js';
import { waitUntil } from '../helpers/wait.js';

const MiB = 1024 * 1024;

/**
 * Free space left to `cds serve`: its landing files, DuckDB's log and the checkpoints of the
 * first batches fit, and the database file then grows into the end of it. Less, and the landing
 * files fill the disk before any checkpoint fails (the loop then only retries its batch).
 */
const HEADROOM_BYTES = 8 * MiB;

/** Events a request carries, and how long the sender waits between requests. */
const EVENTS_PER_REQUEST = 150;
const PAUSE_MS = 100;

/**
 * The sender waits while this much is sealed and not ingested, so that the database fills the
 * disk and each batch stays small. A batch's log is several times its landing bytes: a first batch
 * of 2 MiB (a loaded machine's ingest starting late) could not write its log into the headroom,
 * and a commit the disk refuses is retried until there is room, without any checkpoint failing.
 */
const MAX_BACKLOG_BYTES = 256 * 1024;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `waitUntil` by the wall clock: each round here sends a request and may take a while. */
async function until(done: () => Promise<boolean>, what: string, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await sleep(50);
  }
}

/** An answer of cds; the ingest counters only on `/readyz`. */
interface Answer {
  status: number;
  body: {
    ingest?: { backlog_bytes: number; backlog_files: number; failing: boolean; error?: string };
  };
}

async function getJson(url: string, token?: string): Promise<Answer> {
  const response = await fetch(url, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
  return { status: response.status, body: (await response.json()) as Answer['body'] };
}

/** A data dir with the demo tenant set up and its registry written, as `cds serve` expects. */
async function demoDataDir(dir: string) {
  const context = await openContext({ data_dir: dir }, 'create');
  const tokens = await setUpDemo(context);
  await (await openEmbeddedCollector(context)).close();
  await context.store.close();
  return tokens;
}

const unavailableBecauseFull = {
  error: {
    code: 'store_unavailable',
    message: expect.stringContaining('the disk is full (ENOSPC)'),
    details: expect.objectContaining({ reason: 'disk_full' }),
  },
};

describe('cds serve on a disk that fills up', () => {
  it('says the disk is full and why, answers 503 for what it cannot write, and recovers by itself once space is freed, with every acknowledged event stored once', async () => {
    const disk = mountSmallDisk(32);
    const dir = join(disk.dir, 'data');
    try {
      const tokens = await demoDataDir(dir);
      const operator = operatorToken(readFileSync(join(dir, 'master.key')));
      disk.fillLeaving(HEADROOM_BYTES);
      // The batches here are small, and a small batch's rows wait in DuckDB's log until it holds
      // `checkpoint_threshold` (16 MiB by default, more than this disk has left): the log's own
      // writes would then fail cleanly, and no checkpoint would. At 64 KB a checkpoint follows every
      // batch or two, and it is a checkpoint that fails here (the database unavailable is its sign).
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
        /cds listening on (http:\/\/\S+)/,
        undefined,
        { CDS_CHECKPOINT_THRESHOLD: '64KB' },
      );
      const sender = new VisitSender(server.url, 300);
      const { acknowledged, refusals } = sender;
      let request = 0;
      const send = async () => {
        await sender.send(
          Array.from({ length: EVENTS_PER_REQUEST }, (_, index) => `r${request}-e${index}`),
        );
        request += 1;
        await sleep(PAUSE_MS);
      };
      try {
        // Until the database finds no room. Most often a batch's checkpoint does not fit: DuckDB
        // then invalidates the database, and every answer says so (the store tries to reopen it
        // after a second, which may work for a while; the next batch fails again). When the
        // landing files took the last of the disk first, it is the batch's commit that does not
        // fit: nothing of it is stored, the database stays open, and the ingest loop says why
        // while it retries. Which comes first depends on this machine's timing, not on cds.
        const unavailableAnswers = async () =>
          [
            await getJson(`${server.url}/healthz`),
            await getJson(`${server.url}/readyz`),
            await getJson(`${server.url}/v1/tenants/${DEMO_TENANT}/event-types`, tokens.tenant),
          ] as const;
        let invalidated = false;
        await until(
          async () => {
            const ready = await getJson(`${server.url}/readyz`);
            if (ready.body.ingest?.failing) {
              const detail = await getJson(`${server.url}/readyz`, operator);
              if (detail.status === 200) {
                expect(detail.body.ingest?.error).toContain('the disk is full (ENOSPC)');
                return true;
              }
            }
            if ((ready.body.ingest?.backlog_bytes ?? 0) > MAX_BACKLOG_BYTES) return false;
            await send();
            if ((await getJson(`${server.url}/healthz`)).status !== 503) return false;
            const [health, readiness, eventTypes] = await unavailableAnswers();
            if (health.status !== 503 || readiness.status !== 503 || eventTypes.status !== 503) {
              return false;
            }
            expect(health.body).toEqual(unavailableBecauseFull);
            expect(readiness.body).toMatchObject(unavailableBecauseFull);
            expect(eventTypes.body).toMatchObject(unavailableBecauseFull);
            invalidated = true;
            return true;
          },
          'the database to find no room',
          90_000,
        );
        if (invalidated)
          expect(logProblems(server.errors())).toContainEqual(
            expect.objectContaining({
              component: 'store',
              msg: expect.stringContaining(
                'the database is unavailable: the disk is full (ENOSPC)',
              ),
              detail: expect.any(String),
            }),
          );
        // The collector goes on taking events until the landing files fill the disk.
        await until(
          async () => {
            await send();
            return refusals.length > 0;
          },
          'the collector to refuse events',
          60_000,
        );
        for (const refusal of refusals) {
          expect(refusal).toMatchObject({
            status: 503,
            body: { error: { code: 'landing_write_failed' } },
          });
        }

        disk.freeBallast();
        await waitUntil(
          async () => (await getJson(`${server.url}/healthz`)).status === 200,
          'the database to be reopened',
          60_000,
        );
        if (invalidated) expect(server.errors()).toContain('the database is open again');
        // A refused commit is tried again after pauses that grow up to a minute.
        await waitUntil(
          async () => {
            const ready = await getJson(`${server.url}/readyz`);
            return ready.status === 200 && ready.body.ingest?.backlog_files === 0;
          },
          'the backlog to be ingested',
          120_000,
        );
        expect(
          (await getJson(`${server.url}/v1/tenants/${DEMO_TENANT}/event-types`, tokens.tenant))
            .status,
        ).toBe(200);
      } catch (error) {
        console.error(`cds serve said on stderr:\n${server.errors()}`);
        throw error;
      } finally {
        // Still the first process: it was never restarted, and it closes cleanly.
        expect(server.child.exitCode).toBeNull();
        expect(await server.stop()).toBe(0);
      }

      const instance = await DuckDBInstance.create(join(dir, 'cds.duckdb'), {
        access_mode: 'READ_ONLY',
      });
      const connection = await instance.connect();
      const rows = (
        await connection.runAndReadAll('SELECT event_id, profile_id FROM events')
      ).getRowObjectsJson();
      connection.closeSync();
      instance.closeSync();
      const stored = rows.map((row) => String(row.event_id));
      expect(new Set(stored).size).toBe(stored.length);
      // Each event has an anon id of its own, so a profile of its own.
      expect(new Set(rows.map((row) => String(row.profile_id))).size).toBe(stored.length);
      const storedIds = new Set(stored);
      expect(acknowledged.filter((id) => !storedIds.has(id))).toEqual([]);
      expect(acknowledged.length).toBeGreaterThan(0);
    } finally {
      disk.unmount();
    }
  }, 300_000);

  it('answers a write the full disk refuses with the cause, not DuckDB\'s "cannot rollback", and writes again once there is room', async () => {
    const disk = mountSmallDisk(32);
    const store = await Store.open(join(disk.dir, 'cds.duckdb'));
    try {
      await store.write((session) =>
        session.runText('CREATE TABLE filler (text VARCHAR)').then(() => undefined),
      );
      const fill = () =>
        store.write((session) =>
          session.runText("INSERT INTO filler SELECT repeat('x', 1000) FROM range(20000)"),
        );
      disk.fillLeaving(0);
      await expect(fill()).rejects.toMatchObject({
        code: 'store_unavailable',
        message: expect.stringContaining('the disk is full (ENOSPC)'),
      });
      disk.freeBallast();
      await waitUntil(
        () =>
          fill().then(
            () => true,
            () => false,
          ),
        'a write to succeed after space was freed',
      );
    } finally {
      await store.close();
      disk.unmount();
    }
  });

  it('refuses to start on a disk too full to create the database, saying the disk is full', async () => {
    const disk = mountSmallDisk(16);
    const dir = join(disk.dir, 'data');
    try {
      mkdirSync(join(dir, 'landing'), { recursive: true });
      writeFileSync(join(dir, 'master.key'), Buffer.alloc(32, 1), { mode: 0o600 });
      disk.fillLeaving(0);
      const result = await runCli(['--data-dir', dir, 'serve', '--port', '0']);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        `cds: ${join(dir, 'cds.duckdb')} could not be opened: the disk is full (ENOSPC)`,
      );
      expect(result.stderr).not.toContain('triggerUncaughtException');
    } finally {
      disk.unmount();
    }
  });

  it('refuses a first start on a full disk saying so, and leaves no short master.key behind', async () => {
    const disk = mountSmallDisk(16);
    const dir = join(disk.dir, 'data');
    try {
      disk.fillLeaving(0);
      const result = await runCli(['--data-dir', dir, 'serve', '--port', '0']);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `cds: ${join(dir, 'master.key')} could not be opened: the disk is full (ENOSPC). Free space on its disk (or repair it) and start again\n`,
      );
      expect(existsSync(join(dir, 'master.key'))).toBe(false);
    } finally {
      disk.unmount();
    }
  });
});
