import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, open, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { BusRole, BusSettings } from './connect.js';
import { hashBusPassword } from './passwords.js';
import { makePrivateCa, type PrivateCa } from './private-ca.js';
import { type ClusterSpec, type NodeConfig, renderClusterConfigs } from './server-config.js';

/** Debian's package puts the server in /usr/sbin, outside an ordinary user's PATH. */
const NATS_SERVER_PATHS = [
  '/usr/sbin/nats-server',
  '/usr/bin/nats-server',
  '/usr/local/bin/nats-server',
];

export function natsServerPath(): string {
  const found = NATS_SERVER_PATHS.find((path) => existsSync(path));
  if (!found)
    throw new Error(
      `nats-server is not installed (looked in ${NATS_SERVER_PATHS.join(', ')}); run scripts/system-packages.sh, or apt-get install nats-server`,
    );
  return found;
}

/** How many times a cluster starts on new ports when one it chose was taken meanwhile. */
const PORT_ATTEMPTS = 3;

/** Whether a node's log says it could not listen on a port it was given. */
async function anyPortTaken(dir: string, nodes: readonly NodeConfig[]): Promise<boolean> {
  const logs = await Promise.all(
    nodes.map((node) => readFile(join(dir, `${node.name}.log`), 'utf8').catch(() => '')),
  );
  return logs.some((log) => /address already in use/i.test(log));
}

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** What `/jsz` of a node says of the JetStream metadata group. */
interface MetaCluster {
  leader?: string;
  /** On the leader only: the other peers, and whether each is caught up with it. */
  replicas?: { name: string; current: boolean }[];
}

async function metaClusterOf(node: NodeConfig): Promise<MetaCluster> {
  return fetch(`http://${node.host}:${node.monitorPort}/jsz`)
    .then((response) => response.json() as Promise<{ meta_cluster?: MetaCluster }>)
    .then(
      (jsz) => jsz.meta_cluster ?? {},
      () => ({}),
    );
}

/**
 * A fresh cluster answers healthy before its nodes have elected the JetStream metadata leader,
 * and until then every stream request times out; and until the leader counts every other node
 * as a current peer, a stream of three replicas finds "no suitable peers for placement" (seen
 * under load, when a file's `cds bus init` came right after the start).
 */
async function metaClusterFormed(nodes: readonly NodeConfig[], deadline: number): Promise<void> {
  while (Date.now() < deadline) {
    const metas = await Promise.all(nodes.map(metaClusterOf));
    const leader = metas[0]?.leader;
    const leaderMeta = metas[nodes.findIndex((node) => node.name === leader)];
    const followers = nodes.filter((node) => node.name !== leader).map((node) => node.name);
    if (
      leader &&
      metas.every((meta) => meta.leader === leader) &&
      followers.every((name) =>
        leaderMeta?.replicas?.some((replica) => replica.name === name && replica.current),
      )
    )
      return;
    await sleep(100);
  }
  throw new Error(
    'the nats-server nodes formed no JetStream metadata group (a leader and every peer current) in time',
  );
}

/**
 * The local cluster hashes its passwords at bcrypt's lowest cost: it is on loopback, and every
 * connection of the tests makes the server check a hash (cost 11 costs each one tens of ms).
 */
const LOCAL_BCRYPT_COST = 4;

export interface LocalCluster extends RunningNodes {
  /** `tls://127.0.0.1:port` of every node, for `--bus`. */
  servers: string[];
  nodes: NodeConfig[];
  /** The credentials file of each role, for `--bus-creds`. */
  creds: Record<BusRole, string>;
  /** The private CA the nodes' certificates come from, and a client certificate it signed. */
  tls: PrivateCa;
  /** How `role` connects: the servers, its credentials and the CA. */
  settings(role: BusRole): BusSettings;
  /** The same as CLI flags: `--bus … --bus-creds … --bus-ca …`. */
  flags(role: BusRole): string[];
}

/**
 * Three (or `size`) `nats-server` processes clustered on loopback ports chosen free, with
 * JetStream on and the users of a closed bus: for `npm run cluster` and the cluster tests. Their
 * configuration is what `cds bus config` prints (the same rendering), with bcrypt-hashed
 * passwords and TLS for clients and routes from a private CA made in `<dir>/tls`.
 * Each node logs to `<dir>/<name>.log`.
 */
export async function startLocalCluster(dir: string, size = 3): Promise<LocalCluster> {
  await mkdir(dir, { recursive: true });
  const nodesOnFreePorts = async () => {
    const nodes: NodeConfig[] = [];
    for (let index = 1; index <= size; index += 1) {
      nodes.push({
        name: `n${index}`,
        host: '127.0.0.1',
        clientPort: await freePort(),
        clusterPort: await freePort(),
        monitorPort: await freePort(),
        storeDir: join(dir, `n${index}`),
      });
    }
    return nodes;
  };
  let nodes = await nodesOnFreePorts();
  const secret = () => randomBytes(18).toString('base64url');
  const passwords = { collector: secret(), owner: secret(), admin: secret() };
  const tlsDir = join(dir, 'tls');
  await mkdir(tlsDir, { recursive: true });
  const tls = await makePrivateCa(tlsDir, ['127.0.0.1', 'localhost']);
  const hashed = async (role: BusRole) => ({
    user: role,
    passwordHash: await hashBusPassword(passwords[role], LOCAL_BCRYPT_COST),
  });
  const spec: ClusterSpec = {
    nodes,
    users: {
      route: { user: 'route', password: secret() },
      users: {
        collector: await hashed('collector'),
        owner: await hashed('owner'),
        admin: await hashed('admin'),
      },
    },
    tls: {
      caFile: tls.caFile,
      certFile: tls.serverCert,
      keyFile: tls.serverKey,
      verifyClients: false,
    },
    maxFileStore: '4GB',
  };
  const creds = {} as Record<BusRole, string>;
  for (const role of ['collector', 'owner', 'admin'] as const) {
    creds[role] = join(dir, `${role}.creds.json`);
    await writeFile(creds[role], JSON.stringify({ user: role, password: passwords[role] }), {
      mode: 0o600,
    });
  }
  let rendered = renderClusterConfigs(spec);
  const configs = nodes.map((node) => join(dir, `${node.name}.conf`));
  let running: RunningNodes | undefined;
  for (let attempt = 1; running === undefined; attempt += 1) {
    await Promise.all(
      rendered.map(({ config }, index) =>
        writeFile(configs[index] as string, config, { mode: 0o600 }),
      ),
    );
    try {
      running = await runNodes(dir, nodes, configs);
    } catch (error) {
      // A port found free was taken before its node bound it (another process on this machine
      // asked for a free port meanwhile): the nodes start again on other ports.
      if (attempt >= PORT_ATTEMPTS || !(await anyPortTaken(dir, nodes))) throw error;
      await Promise.all(
        nodes.flatMap((node) => [
          rm(node.storeDir, { recursive: true, force: true }),
          rm(join(dir, `${node.name}.log`), { force: true }),
        ]),
      );
      nodes = await nodesOnFreePorts();
      spec.nodes = nodes;
      rendered = renderClusterConfigs(spec);
    }
  }
  const servers = rendered.map(({ url }) => url);
  const settings = (role: BusRole): BusSettings => ({
    servers,
    credsPath: creds[role],
    caPath: tls.caFile,
  });
  return {
    servers,
    nodes,
    creds,
    tls,
    settings,
    flags: (role) => [
      '--bus',
      servers.join(','),
      '--bus-creds',
      creds[role],
      '--bus-ca',
      tls.caFile,
    ],
    ...running,
  };
}

/** The `nats-server` processes of a cluster on this machine. */
export interface RunningNodes {
  /** Stops node `index` with SIGKILL: no goodbye to its peers. */
  kill(index: number): Promise<void>;
  /** Starts node `index` again on its store, and waits until its JetStream is up. */
  start(index: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts `nats-server -c <config>` for each node, each logging to `<dir>/<name>.log`, and waits
 * until every one is healthy and their JetStream metadata group is formed.
 */
export async function runNodes(
  dir: string,
  nodes: readonly NodeConfig[],
  configs: readonly string[],
): Promise<RunningNodes> {
  const binary = natsServerPath();
  const processes: (ChildProcess | null)[] = nodes.map(() => null);

  const launch = async (index: number) => {
    const node = nodes[index] as NodeConfig;
    const log = await open(join(dir, `${node.name}.log`), 'a');
    const child = spawn(binary, ['-c', configs[index] as string], {
      stdio: ['ignore', log.fd, log.fd],
    });
    child.once('exit', () => log.close().catch(() => undefined));
    processes[index] = child;
  };
  const healthy = async (index: number, deadline: number) => {
    const node = nodes[index] as NodeConfig;
    const url = `http://${node.host}:${node.monitorPort}/healthz?js-enabled-only=true`;
    while (Date.now() < deadline) {
      const ok = await fetch(url).then(
        (response) => response.ok,
        () => false,
      );
      if (ok) return;
      if (processes[index]?.exitCode != null)
        throw new Error(`nats-server ${node.name} exited; see ${join(dir, `${node.name}.log`)}`);
      await sleep(100);
    }
    throw new Error(
      `nats-server ${node.name} did not become healthy; see ${join(dir, `${node.name}.log`)}`,
    );
  };
  const killed = (index: number) =>
    new Promise<void>((resolve) => {
      const child = processes[index];
      processes[index] = null;
      if (!child || child.exitCode !== null || child.signalCode !== null) return resolve();
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    });

  await Promise.all(nodes.map((_, index) => launch(index)));
  const deadline = Date.now() + 30_000;
  try {
    await Promise.all(nodes.map((_, index) => healthy(index, deadline)));
    await metaClusterFormed(nodes, deadline);
  } catch (error) {
    // Nodes left running would outlive the caller, which has nothing to stop them with.
    await Promise.all(nodes.map((_, index) => killed(index)));
    throw error;
  }
  return {
    kill: killed,
    async start(index) {
      await launch(index);
      await healthy(index, Date.now() + 30_000);
    },
    async stop() {
      await Promise.all(nodes.map((_, index) => killed(index)));
    },
  };
}
