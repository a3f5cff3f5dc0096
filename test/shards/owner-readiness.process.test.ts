import { describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import {
  publishMany,
  SHARED_MASTER_KEY,
  seedShardDir,
  startOwnerProcess,
  useOwnerCluster,
  waitDrained,
} from '../helpers/bus-owners.js';
import type { ChildServer } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';

const bus = useOwnerCluster();
const operator = {
  authorization: `Bearer ${operatorToken(Buffer.from(SHARED_MASTER_KEY, 'hex'))}`,
};
const MAX_LAG_MS = 1500;
/**
 * How often the owners read their backlog (`bus_backlog_interval_ms`, 5 s by default). The first
 * test reads `/readyz` between the reading made before the first round and the next one, which
 * must come after the owner has caught up with its 300 events; the second only waits for
 * readings, so its owner reads often.
 */
const BACKLOG_INTERVAL_MS = 2000;
const OUTAGE_BACKLOG_INTERVAL_MS = 250;

interface StreamFigures {
  pending: number;
  lag_seconds: number;
  read_at: string | null;
  tenants?: { tenant_id: string; pending: number; lag_seconds: number }[];
}

interface Readiness {
  status?: string;
  ingest?: { lag_seconds: number; stream?: StreamFigures };
  error?: { code: string; message: string; details: { ingest: { stream: StreamFigures } } };
}

async function readyz(
  owner: ChildServer,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Readiness }> {
  const response = await fetch(`${owner.url}/readyz`, { headers });
  return { status: response.status, body: (await response.json()) as Readiness };
}

async function metric(owner: ChildServer, name: string): Promise<number> {
  const text = await (await fetch(`${owner.url}/metrics`, { headers: operator })).text();
  const line = text.split('\n').find((row) => row.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no ${name} in /metrics`);
  return Number(line.slice(name.length + 1));
}

/** Each test's owner has a shard of its own, so it takes only its own tenants. */
const startOwner = (shard: string, dir: string, backlogIntervalMs: number) =>
  startOwnerProcess(bus.cluster, shard, dir, {
    CDS_BUS_READY_MAX_LAG_MS: String(MAX_LAG_MS),
    CDS_BUS_BACKLOG_INTERVAL_MS: String(backlogIntervalMs),
  });

describe('/readyz of a bus owner: its stream backlog', () => {
  it('shows the backlog left while the owner was down, answers 503 until caught up, then 200', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['rho', 'rhea']);
    // Up once: its tenants are on its shard and their consumers exist, then it stops.
    const first = await startOwner('r', dir, BACKLOG_INTERVAL_MS);
    await publishMany(bus.collector, 'rho', 10);
    await waitDrained(bus.admin, ['rho', 'rhea']);
    // The reading after the drain shows nothing pending.
    await expect
      .poll(async () => (await readyz(first)).body.ingest?.stream, { timeout: 20_000 })
      .toMatchObject({ pending: 0, lag_seconds: 0 });
    expect(await first.stop()).toBe(0);

    // Down: events wait in the stream, growing older than the threshold.
    const published = Date.now();
    await publishMany(bus.collector, 'rho', 300);
    await new Promise((resolve) => setTimeout(resolve, MAX_LAG_MS + 1000));

    const owner = await startOwner('r', dir, BACKLOG_INTERVAL_MS);
    try {
      // The backlog was read before the first round, and is read again BACKLOG_INTERVAL_MS later.
      const behind = await readyz(owner);
      const operatorView = await readyz(owner, operator);
      const messages = await metric(owner, 'cds_stream_backlog_messages');
      const flagged = await metric(owner, 'cds_stream_behind');
      expect(behind.status).toBe(503);
      expect(behind.body.error?.code).toBe('ingest_behind');
      expect(behind.body.error?.message).toMatch(
        /^this owner is behind its stream: the oldest event of its stream backlog is \d+ s old, more than bus_ready_max_lag_ms \(1500 ms\)/,
      );
      const stream = behind.body.error?.details.ingest.stream as StreamFigures;
      expect(stream.pending).toBe(300);
      expect(stream.lag_seconds).toBeGreaterThan(MAX_LAG_MS / 1000);
      expect(stream.lag_seconds).toBeLessThan((Date.now() - published) / 1000 + 1);
      expect(stream.read_at).not.toBeNull();
      // Which tenants are behind is the operator's to read.
      expect(stream.tenants).toBeUndefined();
      expect(operatorView.status).toBe(503);
      const tenants = operatorView.body.error?.details.ingest.stream.tenants;
      expect(tenants).toEqual([
        { tenant_id: 'rho', pending: 300, lag_seconds: expect.any(Number) },
      ]);
      expect(tenants?.[0]?.lag_seconds).toBeGreaterThan(MAX_LAG_MS / 1000);
      expect(messages).toBe(300);
      expect(flagged).toBe(1);

      await waitDrained(bus.admin, ['rho']);
      await expect
        .poll(async () => (await readyz(owner)).status, { timeout: 20_000, interval: 250 })
        .toBe(200);
      const ready = await readyz(owner, operator);
      expect(ready.status).toBe(200);
      expect(ready.body.status).toBe('ready');
      expect(ready.body.ingest?.stream).toMatchObject({ pending: 0, lag_seconds: 0, tenants: [] });
      expect(ready.body.ingest?.lag_seconds).toBeLessThan(MAX_LAG_MS / 1000);
      expect(await metric(owner, 'cds_stream_backlog_messages')).toBe(0);
      expect(await metric(owner, 'cds_stream_behind')).toBe(0);
    } finally {
      await owner.stop();
    }
  }, 180_000);

  it('answers 503 while the bus is gone for longer than the threshold, and 200 once it is back', async () => {
    const dir = tempDir();
    await seedShardDir(dir, ['sigma']);
    const owner = await startOwner('s', dir, OUTAGE_BACKLOG_INTERVAL_MS);
    try {
      await expect.poll(async () => (await readyz(owner)).status, { timeout: 20_000 }).toBe(200);
      // Read every bus_backlog_interval_ms, not every 5 s.
      const readAt = async () => (await readyz(owner)).body.ingest?.stream?.read_at;
      const firstRead = await readAt();
      await expect.poll(readAt, { timeout: 2000, interval: 50 }).not.toBe(firstRead);
      const nodes = bus.cluster.nodes.map((_, index) => index);
      await Promise.all(nodes.map((index) => bus.cluster.kill(index)));
      try {
        // Neither its batches nor its backlog reading can reach the stream: nothing says it keeps up.
        await expect
          .poll(async () => (await readyz(owner)).body.error?.code, { timeout: 30_000 })
          .toBe('ingest_behind');
        const gone = await readyz(owner);
        expect(gone.status).toBe(503);
        expect(gone.body.error?.message).toMatch(
          /^this owner is behind its stream: (its ingest batches have failed for \d+ s|its stream backlog could not be read for) more than bus_ready_max_lag_ms \(1500 ms\)/,
        );
      } finally {
        for (const index of nodes) await bus.cluster.start(index);
      }
      await expect
        .poll(async () => (await readyz(owner)).status, { timeout: 60_000, interval: 500 })
        .toBe(200);
    } finally {
      await owner.stop();
    }
  }, 180_000);
});
