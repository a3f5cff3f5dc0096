import { join } from 'node:path';
import { type BusConnection, type BusRole, connectBus } from '../../src/bus/connect.js';
import { type LocalCluster, startLocalCluster } from '../../src/bus/local-cluster.js';
import { DEFAULT_SIZING, initBus } from '../../src/bus/setup.js';
import { EVENTS_STREAM } from '../../src/bus/subjects.js';
import { tempDir } from './temp-dirs.js';

export interface TestCluster extends LocalCluster {
  /** A connection as `role`, closed with the cluster. */
  connect(role: BusRole): Promise<BusConnection>;
  /** The index of the node that leads the events stream now. */
  streamLeader(): Promise<number>;
  /** Stops every node and closes every connection. */
  close(): Promise<void>;
}

/**
 * A three-node cluster on loopback with the stream and buckets made (`cds bus init`), for one
 * test file. nats-server missing fails the test: `npm test` installs it first.
 */
export async function startTestCluster(): Promise<TestCluster> {
  const dir = join(await tempDir(), 'nats');
  const cluster = await startLocalCluster(dir);
  const connections: BusConnection[] = [];
  const connect = async (role: BusRole) => {
    const connection = await connectBus(cluster.settings(role), role);
    connections.push(connection);
    return connection;
  };
  const admin = await connect('admin');
  await initBus(admin, DEFAULT_SIZING);
  return {
    ...cluster,
    connect,
    async streamLeader() {
      const info = await (await admin.manager()).streams.info(EVENTS_STREAM);
      const leader = info.cluster?.leader;
      const index = cluster.nodes.findIndex((node) => node.name === leader);
      if (index < 0) throw new Error(`no leader for ${EVENTS_STREAM} (${leader})`);
      return index;
    },
    async close() {
      await Promise.all(connections.map((connection) => connection.close().catch(() => undefined)));
      await cluster.stop();
    },
  };
}
