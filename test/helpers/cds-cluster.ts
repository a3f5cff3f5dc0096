import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { BusRole } from '../../src/bus/connect.js';
import { EVENTS_STREAM } from '../../src/bus/subjects.js';
import { type ChildServer, type CliResult, runCli, startCli } from './cli.js';
import { startTestCluster, type TestCluster } from './nats-cluster.js';
import { tempDir } from './temp-dirs.js';
import { waitUntil } from './wait.js';

/** A daemon announces its address in its log, plain or JSON. */
const LISTENING = /listening on (http:\/\/[^\s"]+)/;
const START_TIMEOUT_MS = 60_000;
export interface CdsProcess {
  /** The running process, or null while it is down. */
  server: ChildServer | null;
  /** Where it answered last: a client of a process down still tries it there. */
  url: string;
}

export interface Owner extends CdsProcess {
  shard: string;
  /** Its data dir; a restart or a restore may point it elsewhere. */
  dir: string;
}

export interface Collector extends CdsProcess {
  index: number;
}

export interface ClusterTenant {
  tenant: string;
  shard: string;
  workspace: string;
  token: string;
}

/** Event ids per tenant, each with how many times a database holds it. */
export type StoredEvents = Map<string, Map<string, number>>;

/**
 * A whole cds cluster on loopback for one test file: three nats-server nodes (`cds bus init`
 * done), owners and collectors as child processes of the real CLI, all sharing one master key.
 */
export interface CdsCluster {
  nats: TestCluster;
  root: string;
  masterKey: string;
  owners: Map<string, Owner>;
  collectors: Collector[];
  /** `--bus URLS --bus-creds FILE` of a role. */
  busArgs(role: BusRole): string[];
  /** Runs `cds` with the cluster's master key; fails with its stderr unless it exits 0. */
  cds(args: string[]): Promise<CliResult>;
  /** The operator token, the same on every owner (it derives from the master key). */
  operatorToken(): Promise<string>;
  /** Starts (or restarts) the owner of `shard` on its data dir, `dir` if given. */
  startOwner(shard: string, dir?: string): Promise<Owner>;
  startCollector(index: number): Promise<Collector>;
  /** SIGKILL: no goodbye, as a machine lost. */
  kill(process: CdsProcess): Promise<void>;
  /** SIGTERM, and wait until it exited (the DuckDB file is then free). */
  stop(process: CdsProcess): Promise<void>;
  /** Assigns `tenant` to `shard`, creates it through `via` with a workspace and `page_view`. */
  createTenant(tenant: string, shard: string, via: Owner): Promise<ClusterTenant>;
  /** Waits until every consumer of the events stream has nothing pending or unacknowledged. */
  drained(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startCdsCluster(): Promise<CdsCluster> {
  const nats = await startTestCluster();
  const root = tempDir('cds-cluster-');
  const masterKey = randomBytes(32).toString('hex');
  // The log stays at info: the line a daemon announces its address on is an info record.
  const env = { CDS_MASTER_KEY: masterKey };
  const owners = new Map<string, Owner>();
  const collectors: Collector[] = [];
  let operator: Promise<string> | undefined;
  const admin = await nats.connect('admin');
  const busArgs = (role: BusRole) => nats.flags(role);
  const cds = async (args: string[]) => {
    const result = await runCli(args, env);
    if (result.code !== 0)
      throw new Error(`cds ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return result;
  };
  const stopped = async (process: CdsProcess, signal: NodeJS.Signals) => {
    const server = process.server;
    process.server = null;
    if (!server || server.child.exitCode !== null || server.child.signalCode !== null) return;
    const exited = new Promise((resolve) => server.child.once('exit', resolve));
    server.child.kill(signal);
    await exited;
  };

  const cluster: CdsCluster = {
    nats,
    root,
    masterKey,
    owners,
    collectors,
    busArgs,
    cds,
    operatorToken() {
      // Asked of the CLI once: it is the same for every owner and never changes.
      operator ??= (async () => {
        const owner = owners.values().next().value as Owner | undefined;
        const dir = owner?.dir ?? join(root, 'owner-a');
        return (await cds(['tokens', 'operator', '-d', dir])).stdout.trim();
      })();
      return operator;
    },
    async startOwner(shard, dir) {
      const owner: Owner = owners.get(shard) ?? {
        shard,
        dir: join(root, `owner-${shard}`),
        server: null,
        url: '',
      };
      if (dir) owner.dir = dir;
      owner.server = await startCli(
        ['serve', '-d', owner.dir, ...busArgs('owner'), '--shard', shard, '--port', '0', '--quiet'],
        LISTENING,
        START_TIMEOUT_MS,
        env,
      );
      owner.url = owner.server.url;
      owners.set(shard, owner);
      return owner;
    },
    async startCollector(index) {
      const collector: Collector = collectors[index] ?? {
        index,
        server: null,
        url: '',
      };
      collector.server = await startCli(
        ['collect', '-d', join(root, `collector-${index}`), ...busArgs('collector'), '--port', '0'],
        LISTENING,
        START_TIMEOUT_MS,
        env,
      );
      collector.url = collector.server.url;
      collectors[index] = collector;
      return collector;
    },
    kill: (process) => stopped(process, 'SIGKILL'),
    stop: (process) => stopped(process, 'SIGTERM'),
    async createTenant(tenant, shard, via) {
      await cds(['shards', 'assign', tenant, shard, ...busArgs('admin')]);
      const operator = await cluster.operatorToken();
      const created = JSON.parse(
        (
          await cds([
            '--server',
            via.url,
            '--token',
            operator,
            '--json',
            'tenants',
            'create',
            tenant,
            '-w',
            'web',
          ])
        ).stdout,
      ) as { tenant_token: { token: string } };
      const registered = await fetch(`${via.url}/v1/tenants/${tenant}/event-types/page_view`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${created.tenant_token.token}`,
          'content-type': 'application/json',
        },
        body: '{}',
      });
      if (!registered.ok)
        throw new Error(`registering page_view for ${tenant}: ${registered.status}`);
      return { tenant, shard, workspace: 'web', token: created.tenant_token.token };
    },
    async drained(timeoutMs = 60_000) {
      const manager = await admin.manager();
      let behind: string[] = [];
      await waitUntil(
        async () => {
          const consumers = await manager.consumers.list(EVENTS_STREAM).next();
          behind = consumers
            .filter((consumer) => consumer.num_pending > 0 || consumer.num_ack_pending > 0)
            .map(
              (consumer) =>
                `${consumer.name} (${consumer.num_pending} pending, ${consumer.num_ack_pending} unacknowledged)`,
            );
          return behind.length === 0;
        },
        'every consumer of the events stream to have nothing pending',
        timeoutMs,
      ).catch((error: unknown) => {
        throw new Error(`${(error as Error).message}; still behind: ${behind.join(', ')}`);
      });
    },
    async close() {
      await Promise.all(
        [...owners.values(), ...collectors].map((process) => stopped(process, 'SIGKILL')),
      );
      await nats.close();
    },
  };
  return cluster;
}

/**
 * How many times each (tenant, event id) is stored in an owner's database, opened read-only:
 * the owner must be stopped first.
 */
export async function storedEvents(dataDir: string): Promise<StoredEvents> {
  const instance = await DuckDBInstance.create(join(dataDir, 'cds.duckdb'), {
    access_mode: 'READ_ONLY',
  });
  const connection = await instance.connect();
  try {
    const reader = await connection.runAndReadAll(
      'SELECT tenant_id, event_id, count(*) AS copies FROM events GROUP BY tenant_id, event_id',
    );
    const stored: StoredEvents = new Map();
    for (const row of reader.getRowObjectsJson()) {
      const tenant = String(row.tenant_id);
      const ids = stored.get(tenant) ?? new Map<string, number>();
      ids.set(String(row.event_id), Number(row.copies));
      stored.set(tenant, ids);
    }
    return stored;
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}
