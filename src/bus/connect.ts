import { readFileSync } from 'node:fs';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { Kvm } from '@nats-io/kv';
import type { Authenticator, NatsConnection, TlsOptions } from '@nats-io/transport-node';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { requirePackage } from '../require-package.js';
import { componentLog } from '../telemetry/log.js';

/**
 * Who a process is on the bus (docs/scaling.md, "A closed bus"): the cluster's configuration
 * grants each role its subjects, and each role answers on an inbox prefix of its own, the only
 * subjects it may subscribe to.
 * - `collector`: `cds collect`, publishes events and watches the registry.
 * - `owner`: `cds serve --shard`, consumes its tenants' events, writes the buckets, and publishes
 *   events as its own collector does.
 * - `admin`: `cds bus init` and the operator's `cds shards`, everything.
 */
export type BusRole = 'collector' | 'owner' | 'admin';

export const INBOX_PREFIX: Record<BusRole, string> = {
  collector: '_INBOX_collector',
  owner: '_INBOX_owner',
  admin: '_INBOX_admin',
};

export interface BusSettings {
  servers: readonly string[];
  /** `--bus-creds`: unset, the process connects without credentials (a closed bus refuses it). */
  credsPath?: string | undefined;
  /** `--bus-ca`: the CA that signed the nodes' certificates; unset, Node's default CAs. */
  caPath?: string | undefined;
  /** `--bus-cert` and `--bus-key`: this process's client certificate, for nodes that verify one. */
  certPath?: string | undefined;
  keyPath?: string | undefined;
}

type TransportNode = typeof import('@nats-io/transport-node');
type JetStreamPackage = typeof import('@nats-io/jetstream');
type KvPackage = typeof import('@nats-io/kv');

/** The NATS packages, loaded at the first connection: the embedded default never pays for them. */
export function natsPackages(): {
  transport: TransportNode;
  jetstream: JetStreamPackage;
  kv: KvPackage;
} {
  return {
    transport: requirePackage<TransportNode>('@nats-io/transport-node'),
    jetstream: requirePackage<JetStreamPackage>('@nats-io/jetstream'),
    kv: requirePackage<KvPackage>('@nats-io/kv'),
  };
}

const passwordCreds = z.strictObject({ user: z.string().min(1), password: z.string().min(1) });
const NKEY_SEED = /^SU[A-Z2-7]{56}$/;

/** A file's text, or a config error naming the flag that named it. */
function readText(path: string, flag: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(flag, `${path} cannot be read (${(error as Error).message})`);
  }
}

/** `{"user","password"}` JSON, or null when the text is not that. */
function passwordCredsOf(text: string): { user: string; password: string } | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  const creds = passwordCreds.safeParse(parsed);
  return creds.success ? creds.data : null;
}

/** A `{"user","password"}` JSON file, as `cds bus config --route-creds` takes. */
export function readPasswordCreds(path: string, flag: string): { user: string; password: string } {
  const creds = passwordCredsOf(readText(path, flag));
  if (!creds) throw new ConfigError(flag, `${path} is not {"user": …, "password": …} JSON`);
  return creds;
}

/** The authenticator a credentials file names: `{"user","password"}` JSON, or an nkey seed. */
function authenticatorOf(path: string, transport: TransportNode): Authenticator {
  const text = readText(path, '--bus-creds').trim();
  if (NKEY_SEED.test(text)) return transport.nkeyAuthenticator(new TextEncoder().encode(text));
  const creds = passwordCredsOf(text);
  if (!creds)
    throw new ConfigError(
      '--bus-creds',
      `${path} is neither {"user": …, "password": …} JSON nor an nkey seed (SU…)`,
    );
  return transport.usernamePasswordAuthenticator(creds.user, creds.password);
}

/**
 * The client's TLS options, read at start so a missing file is a config error naming its flag.
 * Any of them asks for TLS: the client then refuses a node that does not offer it.
 */
function tlsOf(settings: BusSettings): TlsOptions | undefined {
  const { caPath, certPath, keyPath } = settings;
  if (!caPath && !certPath && !keyPath) return undefined;
  if (!certPath !== !keyPath)
    throw new ConfigError(
      certPath ? '--bus-key' : '--bus-cert',
      'is required with the other: a client certificate needs its key',
    );
  return {
    ...(caPath ? { ca: readText(caPath, '--bus-ca') } : {}),
    ...(certPath ? { cert: readText(certPath, '--bus-cert') } : {}),
    ...(keyPath ? { key: readText(keyPath, '--bus-key') } : {}),
  };
}

/** One process's connection to the bus, with the JetStream and key-value clients over it. */
export interface BusConnection {
  readonly role: BusRole;
  readonly nc: NatsConnection;
  readonly js: JetStreamClient;
  readonly kvm: Kvm;
  /** The stream and consumer administration; owners and admins only. */
  manager(): Promise<JetStreamManager>;
  close(): Promise<void>;
}

/**
 * Connects as `role`, reconnecting forever: a node of the cluster going away moves the connection
 * to another, and a publish under way is retried by its caller (publisher.ts). Connection changes
 * go to the log of component `bus`.
 */
export async function connectBus(settings: BusSettings, role: BusRole): Promise<BusConnection> {
  const { transport, jetstream, kv } = natsPackages();
  const authenticator = settings.credsPath
    ? authenticatorOf(settings.credsPath, transport)
    : undefined;
  const tls = tlsOf(settings);
  const log = componentLog('bus');
  let nc: NatsConnection;
  try {
    nc = await transport.connect({
      servers: [...settings.servers],
      name: `cds-${role}-${process.pid}`,
      inboxPrefix: INBOX_PREFIX[role],
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      ...(authenticator ? { authenticator } : {}),
      ...(tls ? { tls } : {}),
    });
  } catch (error) {
    const { message } = error as Error;
    // A node that verifies client certificates drops a client without one after its TLS 1.3
    // handshake, which the client sees only as a connection that never answers.
    const hint =
      tls && !settings.certPath && /timeout/i.test(message)
        ? ' (if the nodes verify client certificates, give --bus-cert and --bus-key)'
        : '';
    throw new ConfigError(
      '--bus',
      `cannot connect to ${settings.servers.join(',')} as ${role}: ${message}${hint}`,
    );
  }
  (async () => {
    for await (const status of nc.status()) {
      if (status.type === 'ping' || status.type === 'staleConnection') continue;
      if (status.type === 'close') log.debug('bus connection closed');
      else if (status.type === 'error' || status.type === 'disconnect')
        log.warn(
          {
            status: status.type,
            detail: String(
              (status as { error?: unknown }).error ?? (status as { server?: string }).server ?? '',
            ),
          },
          `bus ${status.type}`,
        );
      else log.info({ status: status.type }, `bus ${status.type}`);
    }
  })().catch(() => undefined);
  let manager: Promise<JetStreamManager> | null = null;
  return {
    role,
    nc,
    js: jetstream.jetstream(nc),
    kvm: new kv.Kvm(nc),
    manager() {
      manager ??= jetstream.jetstreamManager(nc, { checkAPI: false });
      return manager;
    },
    async close() {
      await nc.drain().catch(() => nc.close());
    },
  };
}
