import { type BusRole, INBOX_PREFIX } from './connect.js';
import { BUCKETS } from './setup.js';
import { EVENTS_STREAM } from './subjects.js';

/**
 * The configuration of the `nats-server` nodes of a cds cluster: JetStream on, routes to every
 * node, and the users of docs/scaling.md "A closed bus". No anonymous user exists, so a client
 * without credentials is refused at connect; each role may publish only what it needs (the lists
 * are what the 3.x clients send, traced in docs/cluster-design.md §1) and subscribe only to its
 * own inbox prefix. `cds bus config` prints it and `startLocalCluster` runs it: one rendering.
 */
export interface NodeConfig {
  name: string;
  /** The address clients and the other nodes reach this node at. */
  host: string;
  clientPort: number;
  clusterPort: number;
  monitorPort: number;
  storeDir: string;
}

export interface ClusterUsers {
  /**
   * Route credentials: only cluster nodes may join. The password is plain because every node's
   * route URLs carry it; the node's file is as secret as it.
   */
  route: { user: string; password: string };
  /** One password user per role, each password a bcrypt hash (`cds bus passwd`). */
  users: Record<BusRole, { user: string; passwordHash: string }>;
}

/** Paths as they are on the nodes; the same path on each node, holding that node's files. */
export interface ClusterTls {
  caFile: string;
  certFile: string;
  keyFile: string;
  /** Clients must present a certificate the CA signed (routes always must). */
  verifyClients: boolean;
}

export interface ClusterSpec {
  nodes: readonly NodeConfig[];
  users: ClusterUsers;
  /** Unset, clients and routes speak plain TCP (one host on loopback, or a trusted network). */
  tls?: ClusterTls | undefined;
  /** The address the client and route ports bind; unset, each node's own host. */
  listenHost?: string | undefined;
  /** The address the monitoring port binds; unset, the same as the client port. */
  monitorHost?: string | undefined;
  /** JetStream's disk limit per node, in nats-server's units (`4GB`). */
  maxFileStore: string;
}

/** A bcrypt hash as nats-server recognises one (it compares anything else as plain text). */
export const BCRYPT_HASH = /^\$2[aby]?\$\d{2}\$[./A-Za-z0-9]{53}$/;

const bucketReads = (bucket: string) => [
  `$JS.API.STREAM.INFO.KV_${bucket}`,
  `$JS.API.CONSUMER.CREATE.KV_${bucket}.>`,
  // A watch checks its ordered consumer, and deletes it when stopped.
  `$JS.API.CONSUMER.INFO.KV_${bucket}.>`,
  `$JS.API.CONSUMER.DELETE.KV_${bucket}.>`,
  `$JS.API.STREAM.MSG.GET.KV_${bucket}`,
  `$JS.API.DIRECT.GET.KV_${bucket}.>`,
];

/** What each role may publish; admin has no list (everything). */
export function publishAllowed(role: Exclude<BusRole, 'admin'>): string[] {
  const events = ['cds.events.>'];
  if (role === 'collector')
    return [
      ...events,
      ...bucketReads(BUCKETS.registry),
      ...bucketReads(BUCKETS.collectors),
      `$KV.${BUCKETS.collectors}.>`,
    ];
  const buckets = [BUCKETS.registry, BUCKETS.shards, BUCKETS.owners, BUCKETS.collectors];
  return [
    // The owner's own collector publishes the events it accepts, as cds collect does.
    ...events,
    '$JS.API.INFO',
    `$JS.API.STREAM.INFO.${EVENTS_STREAM}`,
    `$JS.API.CONSUMER.CREATE.${EVENTS_STREAM}.>`,
    `$JS.API.CONSUMER.DURABLE.CREATE.${EVENTS_STREAM}.>`,
    `$JS.API.CONSUMER.INFO.${EVENTS_STREAM}.>`,
    `$JS.API.CONSUMER.DELETE.${EVENTS_STREAM}.>`,
    `$JS.API.CONSUMER.MSG.NEXT.${EVENTS_STREAM}.>`,
    `$JS.ACK.${EVENTS_STREAM}.>`,
    `$JS.API.STREAM.PURGE.${EVENTS_STREAM}`,
    `$JS.API.STREAM.MSG.GET.${EVENTS_STREAM}`,
    ...buckets.flatMap(bucketReads),
    ...buckets.map((bucket) => `$KV.${bucket}.>`),
  ];
}

const quoted = (value: string) => JSON.stringify(value);
const list = (values: readonly string[]) => `[${values.map(quoted).join(', ')}]`;

function permissions(role: Exclude<BusRole, 'admin'>): string {
  return `{ publish: { allow: ${list(publishAllowed(role))} }, subscribe: { allow: ${list([`${INBOX_PREFIX[role]}.>`])} } }`;
}

/**
 * nats-server's default TLS handshake timeout is half a second, which a loaded machine misses;
 * the same 2 s as the route authorization.
 */
const TLS_TIMEOUT_SECONDS = 2;

function tlsBlock(tls: ClusterTls, verify: boolean, indent: string): string {
  return `${indent}tls { cert_file: ${quoted(tls.certFile)}, key_file: ${quoted(tls.keyFile)}, ca_file: ${quoted(tls.caFile)}, verify: ${verify}, timeout: ${TLS_TIMEOUT_SECONDS} }\n`;
}

/** The URL a client of the cluster lists in `--bus`: `tls://` when the cluster requires TLS. */
export function clientUrl(node: NodeConfig, tls: boolean): string {
  return `${tls ? 'tls' : 'nats'}://${node.host}:${node.clientPort}`;
}

export function renderNodeConfig(node: NodeConfig, spec: ClusterSpec): string {
  const { route } = spec.users;
  for (const role of ['collector', 'owner', 'admin'] as const)
    if (!BCRYPT_HASH.test(spec.users.users[role].passwordHash))
      throw new Error(`the ${role} password must be a bcrypt hash ($2a$…, from cds bus passwd)`);
  const listen = spec.listenHost ?? node.host;
  const monitor = spec.monitorHost ?? listen;
  const routes = spec.nodes.map(
    (peer) =>
      `nats-route://${encodeURIComponent(route.user)}:${encodeURIComponent(route.password)}@${peer.host}:${peer.clusterPort}`,
  );
  const user = (role: BusRole, extra: string) =>
    `    { user: ${quoted(spec.users.users[role].user)}, password: ${quoted(spec.users.users[role].passwordHash)}${extra} }`;
  return `server_name: ${quoted(node.name)}
listen: ${quoted(`${listen}:${node.clientPort}`)}
http: ${quoted(`${monitor}:${node.monitorPort}`)}
max_payload: 1MB
jetstream { store_dir: ${quoted(node.storeDir)}, max_memory_store: 64MB, max_file_store: ${spec.maxFileStore} }
${spec.tls ? tlsBlock(spec.tls, spec.tls.verifyClients, '') : ''}cluster {
  name: cds
  listen: ${quoted(`${listen}:${node.clusterPort}`)}
${spec.tls ? tlsBlock(spec.tls, true, '  ') : ''}  authorization { user: ${quoted(route.user)}, password: ${quoted(route.password)}, timeout: 2 }
  routes: ${list(routes)}
}
authorization {
  users: [
${user('collector', `, permissions: ${permissions('collector')}`)}
${user('owner', `, permissions: ${permissions('owner')}`)}
${user('admin', '')}
  ]
}
`;
}

/** Every node's configuration, in the order of `spec.nodes`. */
export function renderClusterConfigs(
  spec: ClusterSpec,
): { node: NodeConfig; url: string; config: string }[] {
  return spec.nodes.map((node) => ({
    node,
    url: clientUrl(node, spec.tls !== undefined),
    config: renderNodeConfig(node, spec),
  }));
}
