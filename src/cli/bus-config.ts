import { randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import { type BusRole, readPasswordCreds } from '../bus/connect.js';
import {
  BCRYPT_HASH,
  type ClusterSpec,
  type NodeConfig,
  renderClusterConfigs,
} from '../bus/server-config.js';
import { ConfigError } from '../errors.js';
import type { GlobalOptions } from './admin-request.js';
import { output, printLine } from './output.js';

export interface BusConfigFlags {
  node: string[];
  listen?: string;
  monitorHost?: string;
  storeDir: string;
  maxFileStore: string;
  collectorHash: string;
  ownerHash: string;
  adminHash: string;
  routeCreds?: string;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsVerify?: boolean;
  outDir?: string;
}

const PORTS = { client: 4222, cluster: 6222, monitor: 8222 };
const HOST = /^[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/;
const NODE = /^([^:]+)(?::(\d{1,5}):(\d{1,5}):(\d{1,5}))?$/;
const FILE_STORE = /^\d+(K|KB|M|MB|G|GB|T|TB)?$/i;

function port(text: string): number {
  const value = Number(text);
  if (value < 1 || value > 65535) throw new ConfigError('--node', `port ${text} is out of range`);
  return value;
}

function host(text: string, flag: string): string {
  if (!HOST.test(text))
    throw new ConfigError(flag, `${JSON.stringify(text)} is not a host name or IPv4 address`);
  return text;
}

/** `--node host` or `--node host:client:cluster:monitor`, named n1, n2, … in order. */
function nodesOf(specs: readonly string[], storeDir: string): NodeConfig[] {
  const entries = specs.flatMap((spec) => spec.split(',')).map((spec) => spec.trim());
  if (entries.length === 0 || entries.some((entry) => entry === ''))
    throw new ConfigError(
      '--node',
      'is required: one per nats-server, host[:client:cluster:monitor]',
    );
  return entries.map((entry, index) => {
    const match = NODE.exec(entry);
    if (!match)
      throw new ConfigError(
        '--node',
        `${JSON.stringify(entry)} is not host[:client:cluster:monitor]`,
      );
    const name = `n${index + 1}`;
    return {
      name,
      host: host(match[1] as string, '--node'),
      clientPort: match[2] ? port(match[2]) : PORTS.client,
      clusterPort: match[3] ? port(match[3]) : PORTS.cluster,
      monitorPort: match[4] ? port(match[4]) : PORTS.monitor,
      storeDir: join(storeDir, name),
    };
  });
}

function passwordHash(value: string, flag: string): string {
  if (!BCRYPT_HASH.test(value))
    throw new ConfigError(flag, 'must be a bcrypt hash ($2a$… or $2b$…, from cds bus passwd)');
  return value;
}

function tlsOf(flags: BusConfigFlags): ClusterSpec['tls'] {
  const given = [flags.tlsCa, flags.tlsCert, flags.tlsKey].filter(Boolean).length;
  if (given === 0) {
    if (flags.tlsVerify)
      throw new ConfigError('--tls-verify', 'needs --tls-ca, --tls-cert and --tls-key');
    return undefined;
  }
  if (given < 3)
    throw new ConfigError('--tls-ca', 'goes with --tls-cert and --tls-key: give all three or none');
  const path = (value: string | undefined, flag: string) => {
    if (!value || !isAbsolute(value))
      throw new ConfigError(flag, 'must be an absolute path, as the file is on each node');
    return value;
  };
  return {
    caFile: path(flags.tlsCa, '--tls-ca'),
    certFile: path(flags.tlsCert, '--tls-cert'),
    keyFile: path(flags.tlsKey, '--tls-key'),
    verifyClients: flags.tlsVerify === true,
  };
}

/** The cluster `cds bus config` was asked for, checked flag by flag. */
export function clusterSpecOf(flags: BusConfigFlags): ClusterSpec {
  if (!isAbsolute(flags.storeDir))
    throw new ConfigError('--store-dir', 'must be an absolute path on the nodes');
  if (!FILE_STORE.test(flags.maxFileStore))
    throw new ConfigError('--max-file-store', 'must be a size such as 64GB or 500MB');
  const hashes: Record<BusRole, string> = {
    collector: passwordHash(flags.collectorHash, '--collector-hash'),
    owner: passwordHash(flags.ownerHash, '--owner-hash'),
    admin: passwordHash(flags.adminHash, '--admin-hash'),
  };
  const route = flags.routeCreds
    ? readPasswordCreds(flags.routeCreds, '--route-creds')
    : { user: 'route', password: randomBytes(24).toString('base64url') };
  return {
    nodes: nodesOf(flags.node, flags.storeDir),
    users: {
      route,
      users: {
        collector: { user: 'collector', passwordHash: hashes.collector },
        owner: { user: 'owner', passwordHash: hashes.owner },
        admin: { user: 'admin', passwordHash: hashes.admin },
      },
    },
    tls: tlsOf(flags),
    listenHost: flags.listen === undefined ? undefined : host(flags.listen, '--listen'),
    monitorHost:
      flags.monitorHost === undefined ? undefined : host(flags.monitorHost, '--monitor-host'),
    maxFileStore: flags.maxFileStore.toUpperCase(),
  };
}

/**
 * `cds bus config`: each node's `nats-server` configuration for a closed bus, printed (or
 * written as `<dir>/<name>.conf`, mode 0600, with `--out-dir`), and the `--bus` value for cds.
 */
export async function runBusConfig(globals: GlobalOptions, flags: BusConfigFlags): Promise<void> {
  const rendered = renderClusterConfigs(clusterSpecOf(flags));
  const bus = rendered.map(({ url }) => url).join(',');
  const nodes = [];
  for (const { node, url, config } of rendered) {
    let file: string | null = null;
    if (flags.outDir) {
      await mkdir(flags.outDir, { recursive: true });
      file = resolve(flags.outDir, `${node.name}.conf`);
      await writeFile(file, config, { mode: 0o600 });
    }
    nodes.push({ name: node.name, url, file, config });
  }
  output(globals.json, { bus, nodes }, (value) => {
    printLine(`# cds processes connect with --bus ${value.bus}`);
    for (const node of value.nodes) {
      if (node.file) {
        printLine(`# ${node.name} (${node.url}): wrote ${node.file}`);
        continue;
      }
      printLine(`# ---- ${node.name} (${node.url}): nats-server -c ${node.name}.conf`);
      for (const line of node.config.trimEnd().split('\n')) printLine(line);
    }
  });
}
