import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { type AddressInfo, createServer } from 'node:net';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import { connectBus } from '../src/bus/connect.js';
import { type LocalCluster, startLocalCluster } from '../src/bus/local-cluster.js';
import { durableName, EVENTS_STREAM } from '../src/bus/subjects.js';
import { systemClock } from '../src/clock.js';
import { publishRegistry } from '../src/collector/runtime.js';
import { loadConfig } from '../src/config.js';
import { generateEvents } from '../src/demo/generator.js';
import { openDataDir } from '../src/store/data-dir.js';
import { Store } from '../src/store/database.js';
import { KeyRing } from '../src/tenant-keys.js';
import { cpuSeconds } from './collector.js';
import {
  CDS_BIN,
  makeBenchDir,
  prepareDataDir,
  rate,
  stopChild,
  TENANT,
  timeCds,
  WORKSPACES,
} from './setup.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 4;
const BATCH = 1_000;
/** Events in the stream for each ingest run, split evenly over its tenants. */
const INGEST_EVENTS = Number(process.env.BENCH_CLUSTER_EVENTS ?? 100_000);
const INGEST_TENANTS = 4;
const EVENT_TYPES = ['page_viewed', 'product_viewed', 'signed_up', 'order_completed'];
/**
 * The collectors' and owners' per-pair request limit would otherwise be what is measured, and a
 * log record per request would cost the collectors more than it costs a deployment.
 */
const QUIET_AND_UNLIMITED = { CDS_COLLECTOR_RATE_LIMIT: '1000000000', CDS_LOG_LEVEL: 'warn' };
/** Stands in a batch body for the request's number, so that every event id is new. */
const REQUEST_MARK = '@@request@@';

interface Running {
  child: ChildProcess;
  url: string;
}

/** Browser events of one tenant, ids made unique per request by `REQUEST_MARK`. */
function batchTemplate(tenantId: string, seed: number): string {
  const events = [
    ...generateEvents({
      seed,
      tenantId,
      workspaceIds: [WORKSPACES[0]],
      events: BATCH * 3,
      visitors: 1000,
      start: new Date('2026-03-01T00:00:00Z'),
    }),
  ]
    .filter((item) => item.source === 'browser')
    .slice(0, BATCH)
    .map((item, index) => ({ ...item.event, id: `${REQUEST_MARK}-${index}` }));
  if (events.length < BATCH) throw new Error(`only ${events.length} browser events generated`);
  return JSON.stringify({ events });
}

function cds(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CDS_BIN, ...args],
      { env: { ...process.env, ...env } },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`cds ${args.join(' ')} failed: ${stderr}`));
        else resolve(stdout.trim());
      },
    );
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts a cds daemon on a free port with its log at warn, and waits until it answers HTTP:
 * the line announcing its address is an info record, so it is not there to wait for.
 */
async function startQuietly(args: string[], env: NodeJS.ProcessEnv): Promise<Running> {
  const url = `http://127.0.0.1:${await freePort()}`;
  const child = spawn(process.execPath, [CDS_BIN, ...args, '--port', url.split(':')[2] as string], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  for (let waited = 0; ; waited += 100) {
    if (child.exitCode !== null) throw new Error(`cds ${args.join(' ')} exited ${child.exitCode}`);
    const answered = await fetch(`${url}/healthz`).then(
      () => true,
      () => false,
    );
    if (answered) return { child, url };
    if (waited > 60_000) throw new Error(`cds ${args.join(' ')} did not answer at ${url}`);
    await sleep(100);
  }
}

/** The nats-server processes of a local cluster, found by their config files. */
function natsPids(cluster: LocalCluster, dir: string): number[] {
  const configs = cluster.nodes.map((node) => join(dir, `${node.name}.conf`));
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .filter((pid) => {
      try {
        const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return configs.some((config) => command.includes(config));
      } catch {
        return false;
      }
    })
    .map(Number);
}

/** CPU microseconds per event. */
const perEventMicros = (cpuSeconds: number, events: number) =>
  ((cpuSeconds * 1e6) / Math.max(events, 1)).toFixed(1);

const cpuOf = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
/** This process's own CPU seconds (the load client's). */
const ownCpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/** CPU seconds every process of the machine has used so far, from /proc/stat (Linux). */
function machineCpu(): number {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '')
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  // user nice system idle iowait irq softirq steal: busy is all but idle and iowait.
  const busy = fields
    .slice(0, 8)
    .reduce((sum, value, index) => sum + (index === 3 || index === 4 ? 0 : value), 0);
  return busy / 100;
}

/**
 * What bounds a figure, from the cores each process used over `seconds` and the machine's own
 * count (other agents share it): the machine when its cores are nearly all busy, one process
 * when it used about a core (a Node main thread), else waiting (round trips, fetch expiry).
 */
function boundBy(parts: [string, number][], machineBusy: number, seconds: number): string {
  const machine = availableParallelism();
  const used = parts.map(([name, cpu]) => [name, cpu / seconds] as const);
  const ours = used.reduce((sum, [, busy]) => sum + busy, 0);
  const total = machineBusy / seconds;
  const busiest = [...used].sort((a, b) => b[1] - a[1])[0];
  const verdict =
    total >= 0.85 * machine
      ? `this machine's ${machine} cores`
      : busiest && busiest[1] >= 0.85
        ? `${busiest[0]} (about one core)`
        : 'waiting, not CPU';
  const detail = used.map(([name, busy]) => `${name} ${busy.toFixed(2)}`).join(', ');
  return `bound by ${verdict}: ${total.toFixed(2)} of ${machine} cores busy (${detail}, other processes ${Math.max(0, total - ours).toFixed(2)})`;
}

/** A landing-file data dir with the bench tenant and its registry.json, as `cds collect` reads it. */
async function landingCollectorDir(): Promise<string> {
  const { dir } = await prepareDataDir();
  const config = loadConfig({ data_dir: dir }, {});
  const dataDir = openDataDir(config.data_dir);
  const store = await Store.open(dataDir.databasePath);
  await publishRegistry({
    store,
    config,
    dataDir,
    clock: systemClock,
    keyRing: new KeyRing(dataDir.masterKey),
  });
  await store.close();
  return dir;
}

interface CollectorRun {
  events: number;
  collectorCpu: number;
  othersCpu: number;
  clientCpu: number;
  machineCpu: number;
}

/** Acknowledged events/s of one collector under autocannon, and the CPU each process spent. */
async function collectorRun(
  collector: Running,
  others: number[],
  body: string,
): Promise<CollectorRun> {
  const machineBefore = machineCpu();
  const collectorBefore = cpuSeconds(collector.child.pid as number);
  const othersBefore = cpuOf(others);
  const clientBefore = ownCpu();
  let request = 0;
  const result = await autocannon({
    url: `${collector.url}/v1/events/batch`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: SECONDS,
    headers: {
      'content-type': 'application/json',
      'x-tenant-id': TENANT,
      'x-workspace-id': WORKSPACES[0],
    },
    requests: [
      {
        setupRequest: (req) => {
          request += 1;
          return { ...req, body: body.replaceAll(REQUEST_MARK, `r${request}-${Date.now()}`) };
        },
      },
    ],
  });
  if (result.non2xx > 0) console.log(`  (${result.non2xx} answers not 2xx)`);
  return {
    events: result['2xx'] * BATCH,
    collectorCpu: cpuSeconds(collector.child.pid as number) - collectorBefore,
    othersCpu: cpuOf(others) - othersBefore,
    clientCpu: ownCpu() - clientBefore,
    machineCpu: machineCpu() - machineBefore,
  };
}

/** Sends `events` of `tenantId` through a collector, four batches in flight. */
async function fill(collectorUrl: string, tenantId: string, events: number): Promise<void> {
  const body = batchTemplate(tenantId, 11);
  let next = 0;
  const batches = Math.ceil(events / BATCH);
  const sender = async () => {
    for (let batch = next++; batch < batches; batch = next++) {
      const response = await fetch(`${collectorUrl}/v1/events/batch`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-tenant-id': tenantId,
          'x-workspace-id': WORKSPACES[0],
        },
        body: body.replaceAll(REQUEST_MARK, `fill${batch}`),
      });
      if (!response.ok)
        throw new Error(`filling ${tenantId}: ${response.status} ${await response.text()}`);
    }
  };
  await Promise.all([sender(), sender(), sender(), sender()]);
}

export async function benchCluster(): Promise<void> {
  console.log(
    `\n## cluster: 3 nats-server nodes on this machine, ${CONNECTIONS} connections, batches of ${BATCH}, ${SECONDS} s per run`,
  );
  const root = makeBenchDir('cds-bench-cluster-');
  const natsDir = join(root, 'nats');
  const nats = await startLocalCluster(natsDir);
  const masterKey = randomBytes(32).toString('hex');
  const env = { ...QUIET_AND_UNLIMITED, CDS_MASTER_KEY: masterKey };
  const bus = (role: 'collector' | 'owner' | 'admin') => nats.flags(role);
  const running: Running[] = [];
  const start = async (args: string[]) => {
    const started = await startQuietly(args, env);
    running.push(started);
    return started;
  };
  const stop = async (process: Running) => {
    running.splice(running.indexOf(process), 1);
    await stopChild(process.child);
  };
  const startOwner = (shard: string) =>
    start([
      'serve',
      '-d',
      join(root, `owner-${shard}`),
      ...bus('owner'),
      '--shard',
      shard,
      '--quiet',
    ]);
  try {
    await cds(['bus', 'init', ...bus('admin')], env);
    const owners = new Map<string, Running>();
    for (const shard of ['sink', 'solo', 'a', 'b']) owners.set(shard, await startOwner(shard));
    const operator = await cds(['tokens', 'operator', '-d', join(root, 'owner-sink')], env);
    const oneOwner = Array.from({ length: INGEST_TENANTS }, (_, i) => `one-${i + 1}`);
    const twoOwners = Array.from({ length: INGEST_TENANTS }, (_, i) => `two-${i + 1}`);
    const placement: [string, string][] = [
      [TENANT, 'sink'],
      ...oneOwner.map((tenant): [string, string] => [tenant, 'solo']),
      ...twoOwners.map((tenant, i): [string, string] => [tenant, i % 2 === 0 ? 'a' : 'b']),
    ];
    for (const [tenant, shard] of placement) {
      await cds(['shards', 'assign', tenant, shard, ...bus('admin')], env);
      const owner = owners.get(shard) as Running;
      const created = JSON.parse(
        await cds(
          [
            '--server',
            owner.url,
            '--token',
            operator,
            '--json',
            'tenants',
            'create',
            tenant,
            ...WORKSPACES.flatMap((workspace) => ['-w', workspace]),
          ],
          env,
        ),
      ) as { tenant_token: { token: string } };
      for (const name of EVENT_TYPES) {
        const response = await fetch(`${owner.url}/v1/tenants/${tenant}/event-types/${name}`, {
          method: 'PUT',
          headers: {
            authorization: `Bearer ${created.tenant_token.token}`,
            'content-type': 'application/json',
          },
          body: JSON.stringify(
            name === 'order_completed'
              ? { dedup_entity: 'order', dedup_key_paths: ['properties.order_id'] }
              : {},
          ),
        });
        if (!response.ok) throw new Error(`event type ${name} of ${tenant}: ${response.status}`);
      }
    }
    // The owners go: (a) measures collectors alone, and (b) ingests a backlog left in the stream.
    for (const owner of owners.values()) await stop(owner);

    const natsProcesses = natsPids(nats, natsDir);
    const busCollector = await start([
      'collect',
      '-d',
      join(root, 'collector'),
      ...bus('collector'),
    ]);
    const landingCollector = await start(['collect', '-d', await landingCollectorDir()]);
    // The bus collector learns the bench tenant from the registry bucket.
    await fill(busCollector.url, TENANT, BATCH);
    const body = batchTemplate(TENANT, 3);
    // In the order landing, bus, bus, landing, so that drift in the machine's load falls on both.
    const landingFirst = await collectorRun(landingCollector, [], body);
    const busFirst = await collectorRun(busCollector, natsProcesses, body);
    const busSecond = await collectorRun(busCollector, natsProcesses, body);
    const landingSecond = await collectorRun(landingCollector, [], body);
    const wall = 2 * SECONDS;
    const landingEvents = landingFirst.events + landingSecond.events;
    const busEvents = busFirst.events + busSecond.events;
    const sum = (key: Exclude<keyof CollectorRun, 'events'>, ...runs: CollectorRun[]) =>
      runs.reduce((total, run) => total + run[key], 0);
    console.log(
      `(a) cds collect, landing files: ${rate(landingEvents, wall)} acknowledged; ${boundBy(
        [
          ['collector', sum('collectorCpu', landingFirst, landingSecond)],
          ['client', sum('clientCpu', landingFirst, landingSecond)],
        ],
        sum('machineCpu', landingFirst, landingSecond),
        wall,
      )}`,
    );
    console.log(
      `(a) cds collect --bus (R3 stream): ${rate(busEvents, wall)} acknowledged; ${boundBy(
        [
          ['collector', sum('collectorCpu', busFirst, busSecond)],
          ['3 nats-server nodes', sum('othersCpu', busFirst, busSecond)],
          ['client', sum('clientCpu', busFirst, busSecond)],
        ],
        sum('machineCpu', busFirst, busSecond),
        wall,
      )}`,
    );
    console.log(
      `(a) ratio bus / landing: ${(busEvents / landingEvents).toFixed(2)} (target ≥ 0.5); bus collector CPU per event ${perEventMicros(sum('collectorCpu', busFirst, busSecond), busEvents)} µs, landing ${perEventMicros(sum('collectorCpu', landingFirst, landingSecond), landingEvents)} µs`,
    );
    await stop(landingCollector);

    const perTenant = Math.ceil(INGEST_EVENTS / INGEST_TENANTS / BATCH) * BATCH;
    await Promise.all(
      [...oneOwner, ...twoOwners].map((tenant) => fill(busCollector.url, tenant, perTenant)),
    );
    await stop(busCollector);
    const admin = await connectBus(nats.settings('admin'), 'admin');
    const manager = await admin.manager();
    /** Time from the owners' start until their tenants' consumers have nothing pending. */
    const ingestRun = async (shards: string[], tenants: string[]) => {
      const natsBefore = cpuOf(natsProcesses);
      const machineBefore = machineCpu();
      const started = performance.now();
      const shardOwners = await Promise.all(shards.map((shard) => startOwner(shard)));
      const startCpu = shardOwners.map((owner) => cpuSeconds(owner.child.pid as number));
      const listening = (performance.now() - started) / 1000;
      for (;;) {
        const infos = await Promise.all(
          tenants.map((tenant) =>
            manager.consumers.info(EVENTS_STREAM, durableName(tenant)).catch(() => null),
          ),
        );
        const done = infos.every(
          (info) =>
            info !== null &&
            info.num_pending === 0 &&
            info.num_ack_pending === 0 &&
            info.delivered.stream_seq > 0,
        );
        if (done) break;
        await sleep(100);
      }
      const seconds = (performance.now() - started) / 1000;
      const ownerCpu = shardOwners.map((owner) => cpuSeconds(owner.child.pid as number));
      const natsCpu = cpuOf(natsProcesses) - natsBefore;
      const machine = machineCpu() - machineBefore;
      for (const owner of shardOwners) await stop(owner);
      const ingestCpu = ownerCpu.reduce(
        (total, cpu, index) => total + cpu - (startCpu[index] ?? 0),
        0,
      );
      return { seconds, listening, ownerCpu, ingestCpu, natsCpu, machine };
    };
    const events = perTenant * INGEST_TENANTS;
    const one = await ingestRun(['solo'], oneOwner);
    const two = await ingestRun(['a', 'b'], twoOwners);
    for (const [label, run] of [
      ['one owner', one],
      ['two owners', two],
    ] as const) {
      const ingesting = run.seconds - run.listening;
      console.log(
        `(b) ingest from the stream, ${label}: ${events.toLocaleString('en')} events in ${run.seconds.toFixed(2)} s from start, ${rate(events, run.seconds)} (${rate(events, ingesting)} after the ${run.listening.toFixed(2)} s start); ${boundBy(
          [
            ...run.ownerCpu.map((cpu, index): [string, number] => [`owner ${index + 1}`, cpu]),
            ['3 nats-server nodes', run.natsCpu],
          ],
          run.machine,
          run.seconds,
        )}`,
      );
    }
    console.log(
      `(b) ratio two owners / one: ${(one.seconds / two.seconds).toFixed(2)} (target ≥ 1.6 where each owner has its cores; here ${availableParallelism()} cores shared by both owners and the 3 NATS nodes)`,
    );
    await admin.close();

    // The same backlog through the landing path: landing files of one collector, one `cds ingest`.
    const landingDir = await landingCollectorDir();
    const backlogCollector = await start(['collect', '-d', landingDir]);
    await fill(backlogCollector.url, TENANT, events);
    await stop(backlogCollector);
    const landing = await timeCds(['ingest', '-d', landingDir], QUIET_AND_UNLIMITED);
    const ownerCpu = one.ownerCpu.reduce((total, cpu) => total + cpu, 0);
    console.log(
      `(b) ingest from landing files, cds ingest: ${events.toLocaleString('en')} events in ${landing.seconds.toFixed(2)} s, ${rate(events, landing.seconds)}; ${rate(events, landing.cpuSeconds)} per core (${landing.cpuSeconds.toFixed(2)} s of CPU, its start included)`,
    );
    console.log(
      `(b) one owner from the stream per core: ${rate(events, ownerCpu)} (${ownerCpu.toFixed(2)} s of CPU, its start included), ${rate(events, one.ingestCpu)} after its start (${one.ingestCpu.toFixed(2)} s)`,
    );
    console.log(
      `(b) ratio stream / landing per core: ${(landing.cpuSeconds / ownerCpu).toFixed(2)} with the owner's start, ${(landing.cpuSeconds / one.ingestCpu).toFixed(2)} without it (target ≥ 0.8)`,
    );
  } finally {
    for (const process of running.splice(0)) await stopChild(process.child);
    await nats.stop();
  }
}
