import { statSync } from 'node:fs';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { Context } from '../src/context.js';
import { openDataDir } from '../src/store/data-dir.js';
import { Store } from '../src/store/database.js';
import { issueToken } from '../src/tenancy/tokens.js';
import { KeyRing } from '../src/tenant-keys.js';
import { CDS_BIN, prepareDataDir, startChild, stopChild, TENANT, WORKSPACES } from './setup.js';

const WORKSPACE = WORKSPACES[0];
const ERASURES = 20;
/** After the last purge: a rewrite nobody asked for would show up within this. */
const SETTLE_MS = 15_000;

const profileId = (index: number) => `p_${index.toString(16).padStart(24, '0')}`;

/**
 * `events` stored events over one profile per ten events, written straight into the tables
 * ingest fills (ingesting them first would time ingest, not erasure).
 */
async function seed(context: Context, events: number): Promise<void> {
  const profiles = Math.max(1, Math.floor(events / 10));
  const params = { tenant: TENANT, workspace: WORKSPACE, profiles, events };
  await context.store.write(async (session) => {
    await session.runText(
      `INSERT INTO profiles
       SELECT $tenant, $workspace, 'p_' || lpad(lower(to_hex(i)), 24, '0'), TIMESTAMP '2026-01-01', TIMESTAMP '2026-03-01', NULL
       FROM range($profiles) t(i)`,
      { tenant: TENANT, workspace: WORKSPACE, profiles },
    );
    // Real ciphertext: reading a profile decrypts its identifiers.
    const keys = context.keyRing.forTenant(TENANT);
    await session.runText('CREATE TEMP TABLE seed_ciphertexts (i INTEGER, ciphertext BLOB)');
    await session.appendTemporary(
      'seed_ciphertexts',
      Array.from({ length: profiles }, (_, i) => [i, keys.encrypt(`customer-${i}@shop.test`)]),
    );
    await session.runText(
      `INSERT INTO profile_identifiers
       SELECT $tenant, $workspace, md5('key' || i), 'email', 'p_' || lpad(lower(to_hex(i)), 24, '0'),
         ciphertext, 'c***@s***.test', TIMESTAMP '2026-01-01'
       FROM seed_ciphertexts`,
      { tenant: TENANT, workspace: WORKSPACE },
    );
    await session.runText('DROP TABLE seed_ciphertexts');
    await session.runText(
      `INSERT INTO events
       SELECT $tenant, $workspace, gen_random_uuid()::VARCHAR, 'order_completed', 'id:' || i,
         'p_' || lpad(lower(to_hex(i % $profiles)), 24, '0'), 'server',
         TIMESTAMP '2026-01-01' + INTERVAL (i % 5000000) SECOND, TIMESTAMP '2026-03-01',
         json_object('order_id', 'o' || i, 'total', i % 500, 'category', 'shoes'),
         [md5('key' || (i % $profiles))], TIMESTAMP '2026-03-01',
         md5_number($tenant || '/' || $workspace || '/order_completed/id:' || i)
       FROM range($events) t(i)`,
      params,
    );
    await session.runText(
      `INSERT INTO profile_metric_vectors
       SELECT $tenant, $workspace, 'p_' || lpad(lower(to_hex(i)), 24, '0'), MAP {'orders': 10.0}, MAP {}, MAP {}, MAP {},
         TIMESTAMP '2026-03-01'
       FROM range($profiles) t(i)`,
      { tenant: TENANT, workspace: WORKSPACE, profiles },
    );
  });
  await context.store.checkpoint();
}

/** The seeded data dir and a collector token for it. */
async function seededDataDir(events: number) {
  const { dir, tenantToken } = await prepareDataDir();
  const config = loadConfig({ data_dir: dir }, {});
  const dataDir = openDataDir(config.data_dir);
  const context: Context = {
    store: await Store.open(dataDir.databasePath),
    config,
    dataDir,
    clock: systemClock,
    keyRing: new KeyRing(dataDir.masterKey),
  };
  const seeding = performance.now();
  await seed(context, events);
  const collector = await issueToken(context, TENANT, {
    kind: 'collector',
    workspaceId: null,
    name: 'bench',
  });
  await context.store.close();
  return {
    dir,
    databasePath: dataDir.databasePath,
    tenantToken,
    collectorToken: collector.token,
    seededSeconds: (performance.now() - seeding) / 1000,
  };
}

function percentile(values: number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

/** Requests one after another until `stop`, timing each; what did not answer 2xx is counted. */
function timedLoop(request: () => Promise<Response>, stop: () => boolean) {
  const latencies: number[] = [];
  let failed = 0;
  let firstFailure = '';
  const done = (async () => {
    while (!stop()) {
      const started = performance.now();
      const response = await request();
      const body = await response.text();
      latencies.push(performance.now() - started);
      if (!response.ok) {
        failed++;
        firstFailure ||= ` (first: ${response.status} ${body.slice(0, 200)})`;
      }
    }
  })();
  return { latencies, failed: () => `${failed}${firstFailure}`, done };
}

/**
 * 20 erasures back to back against `cds serve` over a store of `events` stored events, while
 * profiles are read and the collector takes events; prints how long the answers took, how many
 * times the file was rewritten (its inode changes at each swap), and when the last erased byte
 * left it.
 */
export async function benchErase(events: number): Promise<void> {
  console.log(
    `\nerasure: ${ERASURES} erasures back to back over ${events.toLocaleString('en')} stored events`,
  );
  const seeded = await seededDataDir(events);
  const size = statSync(seeded.databasePath).size / 2 ** 20;
  console.log(
    `  seeded in ${seeded.seededSeconds.toFixed(1)} s; database file ${size.toFixed(0)} MiB`,
  );
  const cds = await startChild(
    [process.execPath, CDS_BIN, '--data-dir', seeded.dir, 'serve', '--port', '0', '--quiet'],
    /cds listening on (http:\/\/\S+)/,
    // The bench measures erasures beside traffic, not the limits: reads share the tenant token.
    { CDS_COLLECTOR_RATE_LIMIT: '1000000000', CDS_CONTROL_PLANE_RATE_LIMIT: '1000000000' },
  );
  const profiles = `${cds.url}/v1/tenants/${TENANT}/workspaces/${WORKSPACE}/profiles`;
  const asTenant = { authorization: `Bearer ${seeded.tenantToken}` };
  let inode = statSync(seeded.databasePath).ino;
  let rewrites = 0;
  const watcher = setInterval(() => {
    const now = statSync(seeded.databasePath, { throwIfNoEntry: false })?.ino;
    if (now !== undefined && now !== inode) {
      inode = now;
      rewrites++;
    }
  }, 50);
  let stopped = false;
  const profileCount = Math.max(1, Math.floor(events / 10));
  const erased = Array.from({ length: ERASURES }, (_, index) =>
    profileId(Math.floor(((index + 0.5) * profileCount) / ERASURES)),
  );
  const erasedSet = new Set(erased);
  let readIndex = 0;
  const nextRead = (): string => {
    const id = profileId((readIndex++ * 7919 + 1) % profileCount);
    return erasedSet.has(id) ? nextRead() : id;
  };
  const reads = [0, 1].map(() =>
    timedLoop(
      () => fetch(`${profiles}/${nextRead()}`, { headers: asTenant }),
      () => stopped,
    ),
  );
  let batch = 0;
  const collector = timedLoop(
    () =>
      fetch(`${cds.url}/v1/server/events/batch`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${seeded.collectorToken}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify({
          events: Array.from({ length: 10 }, (_, index) => ({
            envelop_version: '1.0',
            id: crypto.randomUUID(),
            name: 'order_completed',
            tenant_id: TENANT,
            workspace_id: WORKSPACE,
            occured_at: '2026-03-01T10:00:00.000Z',
            properties: {
              identifiers: { email: `bench-${batch}-${index}@shop.test` },
              order_id: `bench-${batch++}-${index}`,
            },
          })),
        }),
      }),
    () => stopped,
  );
  try {
    const started = performance.now();
    const answers: number[] = [];
    let slowest = { ms: 0, at: 0, acrossSwap: false };
    for (const id of erased) {
      const asked = performance.now();
      const rewritesBefore = rewrites;
      const response = await fetch(`${profiles}/${id}`, { method: 'DELETE', headers: asTenant });
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`erasing ${id} answered ${response.status}`);
      const ms = performance.now() - asked;
      answers.push(ms);
      if (ms > slowest.ms)
        slowest = { ms, at: asked - started, acrossSwap: rewrites !== rewritesBefore };
    }
    const allAnswered = performance.now() - started;
    let allPurged = Number.NaN;
    while (Number.isNaN(allPurged)) {
      const response = await fetch(`${cds.url}/v1/tenants/${TENANT}/erasures?limit=100`, {
        headers: asTenant,
      });
      const { erasures } = (await response.json()) as { erasures: { purged_at: string | null }[] };
      if (erasures.length === ERASURES && erasures.every((row) => row.purged_at !== null)) {
        allPurged = performance.now() - started;
      } else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const rewritesToPurge = rewrites;
    stopped = true;
    await Promise.all([...reads.map((loop) => loop.done), collector.done]);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const readLatencies = reads.flatMap((loop) => loop.latencies);
    console.log(
      `  answers: p50 ${seconds(percentile(answers, 0.5))}, p99 ${seconds(percentile(answers, 0.99))}, all ${ERASURES} answered after ${seconds(allAnswered)}   target p99 ≤ 2 s`,
    );
    console.log(
      `    slowest: ${seconds(slowest.ms)}, asked ${seconds(slowest.at)} after the first${slowest.acrossSwap ? ', across a swap' : ''}`,
    );
    console.log(
      `  file rewrites: ${rewritesToPurge}, and ${rewrites - rewritesToPurge} more in the ${SETTLE_MS / 1000} s after   target ≤ 2; every erasure purged ${seconds(allPurged)} after the first request`,
    );
    console.log(
      `  meanwhile: profile reads p99 ${percentile(readLatencies, 0.99).toFixed(0)} ms (${readLatencies.length} reads, ${reads.map((loop) => loop.failed()).join(' + ')} not 2xx); collector batches of 10 p99 ${percentile(collector.latencies, 0.99).toFixed(0)} ms (${collector.latencies.length} batches, ${collector.failed()} not 2xx)`,
    );
  } finally {
    stopped = true;
    clearInterval(watcher);
    await stopChild(cds.child);
  }
}
