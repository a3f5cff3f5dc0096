import { type BusRole, INBOX_PREFIX } from './connect.js';
import { BUCKETS } from './setup.js';
import { EVENTS_STREAM } from './subjects.js';

/**
 * The configuration of one `nats-server` node of a cds cluster: JetStream on, routes to every
 * node, and the users of docs/scaling.md "A closed bus". No anonymous user exists, so a client
 * without credentials is refused at connect; each role may publish only what it needs (the lists
 * are what the 3.x clients send, traced in docs/cluster-design.md §1) and subscribe only to its
 * own inbox prefix.
 */
export interface NodeConfig {
  name: string;
  host: string;
  clientPort: number;
  clusterPort: number;
  monitorPort: number;
  storeDir: string;
}

export interface ClusterUsers {
  /** Route credentials: only cluster nodes may join. */
  route: { user: string; password: string };
  /** One password user per role. */
  users: Record<BusRole, { user: string; password: string }>;
}

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

export function renderNodeConfig(
  node: NodeConfig,
  cluster: readonly NodeConfig[],
  users: ClusterUsers,
): string {
  const { route } = users;
  const routes = cluster.map(
    (peer) => `nats-route://${route.user}:${route.password}@${peer.host}:${peer.clusterPort}`,
  );
  const user = (role: BusRole, extra: string) =>
    `    { user: ${quoted(users.users[role].user)}, password: ${quoted(users.users[role].password)}${extra} }`;
  return `server_name: ${quoted(node.name)}
listen: ${quoted(`${node.host}:${node.clientPort}`)}
http: ${quoted(`${node.host}:${node.monitorPort}`)}
max_payload: 1MB
jetstream { store_dir: ${quoted(node.storeDir)}, max_memory_store: 64MB, max_file_store: 4GB }
cluster {
  name: cds
  listen: ${quoted(`${node.host}:${node.clusterPort}`)}
  authorization { user: ${quoted(route.user)}, password: ${quoted(route.password)}, timeout: 2 }
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
