import { join, resolve } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../api/app.js';
import { listenOn } from '../api/base-app.js';
import { tenantRowsRoutes } from '../api/routes/tenant-rows.js';
import { type BusConnection, connectBus } from '../bus/connect.js';
import { startingThroughFailOver } from '../bus/start-retry.js';
import {
  type CollectorRuntime,
  type LandingCollectorRuntime,
  openBusCollector,
  openEmbeddedCollector,
  publishRegistryToBus,
} from '../collector/runtime.js';
import type { Context } from '../context.js';
import { ConfigError } from '../errors.js';
import { LandingLoop } from '../ingest/landing-loop.js';
import { prepareIndexes, saveIndexes } from '../ingest/saved-indexes.js';
import type { ClusterView } from '../shards/cluster-view.js';
import { type RunningOwner, startOwner } from '../shards/owner.js';
import { startingReadiness } from '../shards/owner-readiness.js';
import { DATA_DIR_SNAPSHOT, snapshotEvery } from '../store/snapshot.js';
import { componentLog } from '../telemetry/log.js';
import { configuredSender } from '../webhooks/sender.js';
import type { GlobalOptions } from './admin-request.js';
import { type BusFlags, busConfigInput, busSettingsOf } from './bus-flags.js';
import { cleaningUpOnFailure } from './on-failure.js';
import { openContext } from './open-context.js';

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  collector: CollectorRuntime;
  /** Cluster mode: the owner's one connection to the bus, closed last. */
  bus: BusConnection | null;
  /** Cluster mode (`--bus --shard`): the owner of this process's shard; null embedded. */
  owner: RunningOwner | null;
  /** Seals the landing files and ingests them now (the demo waits for its events this way). */
  ingestNow(): Promise<void>;
  /**
   * Shutdown order: stop accepting requests and let those under way finish, seal the landing
   * files, let the batch under way commit, let the webhook round under way be recorded, then
   * close the database.
   */
  close(): Promise<void>;
}

export interface ServeOptions {
  logRequests: boolean;
  /** Run the ingest loop in this process (design §1: `--no-ingest` turns it off). */
  ingest: boolean;
  /** Rewrite an analysts' snapshot this often (design §3: `--snapshot-every`). */
  snapshot?: { path: string; everyMs: number };
}

interface OpenedCollector {
  collector: CollectorRuntime;
  /** The embedded default's collector, whose landing files the ingest loop reads. */
  landing: LandingCollectorRuntime | null;
  bus: BusConnection | null;
}

/**
 * Cluster mode: the connection of an owner (`--bus` with `--shard`). In bus mode the stream loop
 * ingests what the landing loop would, so a shard is required.
 */
async function ownerBus(context: Context): Promise<BusConnection | null> {
  const settings = busSettingsOf(context.config);
  if (settings === null) {
    if (context.config.shard !== undefined)
      throw new ConfigError('--shard', 'a shard is owned on the bus: give --bus too (or CDS_BUS)');
    return null;
  }
  if (context.config.shard === undefined)
    throw new ConfigError(
      '--bus',
      'cds serve on the bus owns a shard: give --shard NAME (or CDS_SHARD)',
    );
  return connectBus(settings, 'owner');
}

/**
 * The embedded default's collector, or in cluster mode the owner's connection to the bus, every
 * tenant of the database put in the registry bucket, and a collector on the bus like
 * `cds collect --bus`, ready once it has read the registry back.
 */
async function openCollector(context: Context): Promise<OpenedCollector> {
  const bus = await ownerBus(context);
  if (!bus) {
    const landing = await openEmbeddedCollector(context);
    return { collector: landing, landing, bus: null };
  }
  return cleaningUpOnFailure(
    startingThroughFailOver('the collector', async () => {
      await publishRegistryToBus(context, bus);
      const collector = await openBusCollector(bus, context.config, {
        clock: context.clock,
        owner: context,
      });
      await cleaningUpOnFailure(collector.registryLoaded, () => collector.close());
      return { collector, landing: null, bus };
    }),
    () => bus.close(),
  );
}

/**
 * Cluster mode: the shard map and owners the API routes each tenant's requests by
 * (api/cluster-routing.ts), watched on the owner's connection.
 */
async function openClusterRouting(
  context: Context,
  bus: BusConnection | null,
): Promise<ClusterView | null> {
  const { shard, default_shard } = context.config;
  if (!bus || !shard) return null;
  const { openClusterView } = await import('../shards/cluster-view.js');
  return openClusterView(bus, { shard, defaultShard: default_shard });
}

/**
 * Once the ingest loop has nothing sealed to take, a landing file is sealed at this age rather
 * than at `landing_max_age_ms`: while events flow, each batch takes what came during the last
 * one, and a trickle of events still waits a little to share a batch.
 */
const CAUGHT_UP_SEAL_AGE_MS = 250;

export async function startServer(context: Context, options: ServeOptions): Promise<RunningServer> {
  const sender = configuredSender(context);
  const { collector, landing, bus } = await openCollector(context);
  const cluster = await cleaningUpOnFailure(
    startingThroughFailOver('the cluster routing', () => openClusterRouting(context, bus)),
    async () => {
      await collector.close();
      await bus?.close();
    },
  );
  let owner: RunningOwner | null = null;
  // On the bus the stream loop ingests the events stream, and this one what comes back to the
  // landing folder: a quarantined event put back by `cds ingest quarantine retry`.
  const loop = options.ingest
    ? new LandingLoop(context, {
        maxBatchEvents: context.config.max_batch_events,
        intervalMs: context.config.ingest_interval_ms,
        onBatch: () => sender?.tick(),
        ...(landing
          ? { onCaughtUp: () => landing.writer.sealOnceAged(CAUGHT_UP_SEAL_AGE_MS) }
          : {}),
      })
    : null;
  // From listening until the ingest indexes are read: a batch would wait for them.
  let indexesLoading = false;
  const app = buildApp(context, {
    collector,
    ...(cluster ? { cluster } : {}),
    console: true,
    ingestFailure: () => loop?.failure ?? owner?.failure() ?? null,
    indexesLoading: () => indexesLoading,
    // Listening comes before the owner has started: until then it is not ready.
    ...(bus !== null && options.ingest
      ? { streamReadiness: () => owner?.streamReadiness() ?? startingReadiness() }
      : {}),
    logRequests: options.logRequests,
  });
  if (bus !== null) tenantRowsRoutes(app, context.config.shard as string, () => owner);
  const address = await cleaningUpOnFailure(
    listenOn(app, context.config.port, context.config.host),
    async () => {
      cluster?.stop();
      await collector.close();
      await bus?.close();
    },
  );
  // Once listening (a server that cannot listen stops at once): the first batch, on the bus or
  // from landing files, finds them loaded or waits for them.
  if (options.ingest) {
    indexesLoading = true;
    void prepareIndexes(context.store).finally(() => {
      indexesLoading = false;
    });
  }
  if (bus !== null && options.ingest)
    owner = await cleaningUpOnFailure(
      startingThroughFailOver('the owner', () =>
        startOwner(context, bus, {
          shard: context.config.shard as string,
          url: context.config.advertise_url ?? address,
          onBatch: () => sender?.tick(),
        }),
      ),
      async () => {
        await app.close();
        cluster?.stop();
        await collector.close();
        await bus.close();
      },
    );
  loop?.start({ watch: false });
  if (loop && landing) landing.writer.onSealed = () => loop.tick();
  sender?.start();
  const snapshots = options.snapshot
    ? snapshotEvery(context.store, options.snapshot.path, options.snapshot.everyMs)
    : null;
  let closing: Promise<void> | undefined;
  // The loop waits up to a minute between failed attempts; the database back, it goes on at once.
  context.store.onReopened(() => {
    if (loop && !closing) loop.catchUp().catch(() => undefined);
  });
  return {
    app,
    url: address,
    collector,
    bus,
    owner,
    async ingestNow() {
      await landing?.writer.sealAll();
      await loop?.catchUp();
      await owner?.ingestNow();
    },
    close() {
      closing ??= (async () => {
        await app.close();
        cluster?.stop();
        await collector.close();
        await loop?.stop();
        await owner?.close();
        await sender?.stop();
        await snapshots?.stop();
        await saveIndexes(context.store);
        await context.store.close();
        await bus?.close();
      })();
      return closing;
    },
  };
}

/** Keeps the process up until SIGINT or SIGTERM, then closes cleanly. */
export function closeOnSignals(server: Pick<RunningServer, 'close'>): Promise<void> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      const log = componentLog('process');
      log.info({ signal }, 'shutting down: finishing the requests, batch and deliveries under way');
      server.close().then(
        () => {
          log.info('stopped');
          resolve();
        },
        (error: unknown) => {
          log.error({ err: error }, 'error while closing');
          process.exitCode = 1;
          resolve();
        },
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/** The flags of `cds serve`. */
export interface ServeFlags extends BusFlags {
  port?: string;
  shard?: string;
  advertiseUrl?: string;
  host?: string;
  quiet?: boolean;
  ingest: boolean;
  snapshotEvery?: number;
  snapshotPath?: string;
}

/** `cds serve`: the API, the collector and the ingest loop over the data dir, until a signal. */
export async function runServe(globals: GlobalOptions, flags: ServeFlags): Promise<void> {
  const context = await openContext(
    {
      data_dir: globals.dataDir,
      port: flags.port,
      host: flags.host,
      ...busConfigInput(flags),
      shard: flags.shard,
      advertise_url: flags.advertiseUrl,
    },
    'create',
  );
  const server = await cleaningUpOnFailure(
    startServer(context, {
      logRequests: !flags.quiet,
      ingest: flags.ingest,
      ...(flags.snapshotEvery === undefined
        ? {}
        : {
            snapshot: {
              path: resolve(flags.snapshotPath ?? join(context.dataDir.root, DATA_DIR_SNAPSHOT)),
              everyMs: flags.snapshotEvery * 1000,
            },
          }),
    }),
    () => context.store.close(),
  );
  // Signals are handled before readiness is announced: a supervisor may stop us at once.
  const closed = closeOnSignals(server);
  // One record of the log, not a line of its own: off a terminal a shipper reading JSON
  // lines meets nothing else; on one it reads as the other records do.
  componentLog('process').info(
    { url: server.url, data_dir: context.dataDir.root },
    `cds listening on ${server.url} (data: ${context.dataDir.root})`,
  );
  await closed;
}
