import { unwatchFile, watchFile } from 'node:fs';
import type { BucketWatch } from '../bus/bucket-watch.js';
import { ensureBusKey, readBusKey, watchBusKey } from '../bus/bus-key.js';
import type { BusConnection } from '../bus/connect.js';
import { DEFAULT_PUBLISH_POLICY, type PublishPolicy } from '../bus/publisher.js';
import { type Clock, systemClock } from '../clock.js';
import type { Config } from '../config.js';
import { type Context, nowIso } from '../context.js';
import type { DataDir } from '../store/data-dir.js';
import { componentLog } from '../telemetry/log.js';
import { BusSink } from './bus-sink.js';
import { type EventSink, landingSink } from './event-sink.js';
import { IntakePool } from './intake-pool.js';
import { LandingWriter, sealOrphans } from './landing-writer.js';
import { CollectorLiveness, DEFAULT_LIVENESS, type LivenessTiming } from './liveness.js';
import { Registry, type RegistrySnapshot, readRegistryFile } from './registry.js';
import { RegistryBucketWriter, watchRegistry } from './registry-bus.js';
import { RegistryPublisher } from './registry-publisher.js';

/** Design §2: seal at 64 MiB, or after `landing_max_age_ms` (2 s). */
const MAX_FILE_BYTES = 64 * 1024 * 1024;

export function landingWriter(
  root: string,
  config: Pick<Config, 'landing_max_age_ms'>,
): LandingWriter {
  return new LandingWriter({
    root,
    maxFileBytes: MAX_FILE_BYTES,
    maxFileAgeMs: config.landing_max_age_ms,
  });
}

/**
 * How often `cds collect` looks at registry.json: a token revoked is refused within a second
 * (design §8 says "within seconds"), the poll plus reading the file.
 */
const REGISTRY_POLL_MS = 250;

/** What the collector routes run on: the registry they check against and the sink they append to. */
export interface CollectorRuntime {
  registry: Registry;
  sink: EventSink;
  /** Checks batches, the large ones off the request thread. */
  intakePool: IntakePool;
  /** Allowed browser origins by tenant id. */
  corsOrigins: ReadonlyMap<string, readonly string[]>;
  /**
   * Requests per second of each browser (tenant, workspace) pair and of each collector token; on
   * the bus, this collector's share of the limit, read at each request.
   */
  rateLimitPerSecond: number | (() => number);
  /** Requests per second one address may have refused (unknown tenant, workspace or token). */
  refusedRateLimitPerSecond: number;
  /** Stamps `received_at` on every line. */
  clock: Clock;
  /** Re-reads the registry after a control-plane change; a no-op where the database is elsewhere. */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

/** A collector of the embedded default, whose sink is the data dir's landing files. */
export interface LandingCollectorRuntime extends CollectorRuntime {
  writer: LandingWriter;
}

/** A collector on the bus (cluster mode). */
export interface BusCollectorRuntime extends CollectorRuntime {
  /** Resolves once the registry's entries held at the start are applied: until then, not ready. */
  registryLoaded: Promise<void>;
  isReady(): boolean;
  /** Whether an owner has published the bus key: until then every event is refused (503). */
  hasBusKey(): boolean;
}

/** One publisher per open database: its owner is the only process that writes registry.json. */
const publishers = new WeakMap<Context['store'], RegistryPublisher>();

function publisherOf(context: Context): RegistryPublisher {
  let publisher = publishers.get(context.store);
  if (!publisher) {
    publisher = new RegistryPublisher(context);
    publishers.set(context.store, publisher);
  }
  return publisher;
}

/**
 * Reads what collectors check events against from the database and writes it to `registry.json`
 * for `cds collect` processes (design §1). The process that owns the database calls it after
 * every control-plane write, whether or not it runs a collector itself; the snapshot answered
 * was read after that write committed.
 */
export function publishRegistry(context: Context): Promise<RegistrySnapshot> {
  return publisherOf(context).publish();
}

/** The retry budget of every publish and registry put; `bus_publish_budget_ms` shortens it. */
export function publishPolicyOf(config: Pick<Config, 'bus_publish_budget_ms'>): PublishPolicy {
  return { ...DEFAULT_PUBLISH_POLICY, budgetMs: config.bus_publish_budget_ms };
}

/**
 * Cluster mode, on the owner: from now on every publish of the registry also puts each changed
 * tenant entry in the bus's registry bucket, and resolves only once the bucket took it. Puts every
 * tenant of the database now, and the first bus key if the cluster has none (bus/bus-key.ts).
 */
export async function publishRegistryToBus(context: Context, bus: BusConnection): Promise<void> {
  await ensureBusKey(bus, context.dataDir.masterKey, nowIso(context));
  const publisher = publisherOf(context);
  publisher.attachBucket(await RegistryBucketWriter.open(bus, publishPolicyOf(context.config)));
  await publisher.publish();
}

/** The sink boxes to the published bus key: read once, so the first request finds it, then watched. */
async function followBusKey(bus: BusConnection, sink: BusSink): Promise<BucketWatch> {
  sink.useBusKey(await readBusKey(bus));
  return watchBusKey(bus, (busKey) => sink.useBusKey(busKey));
}

/** `cors_origins` of the configuration, by tenant id: tenant ids are never keys of a plain object. */
function corsOriginsOf(config: Pick<Config, 'cors_origins'>): Map<string, readonly string[]> {
  return new Map(Object.entries(config.cors_origins));
}

/** The collector inside the process that holds the database: the registry comes from it. */
export async function openEmbeddedCollector(context: Context): Promise<LandingCollectorRuntime> {
  const registry = new Registry(await publishRegistry(context));
  await sealOrphans(context.dataDir.landingDir);
  const writer = landingWriter(context.dataDir.landingDir, context.config);
  writer.start();
  const intakePool = new IntakePool();
  return {
    registry,
    writer,
    sink: landingSink(writer),
    intakePool,
    corsOrigins: corsOriginsOf(context.config),
    rateLimitPerSecond: context.config.collector_rate_limit,
    refusedRateLimitPerSecond: context.config.refused_rate_limit,
    clock: context.clock,
    async refresh() {
      registry.replace(await publishRegistry(context));
    },
    async close() {
      await writer.close();
      await intakePool.close();
    },
  };
}

/**
 * The collector of `cds collect`, which never opens the database: the registry comes from
 * `registry.json`, re-read whenever the owner rewrites it.
 */
export async function openFileCollector(
  dataDir: DataDir,
  config: Config,
): Promise<LandingCollectorRuntime> {
  const registry = new Registry(await readRegistryFile(dataDir.registryPath));
  await sealOrphans(dataDir.landingDir);
  const writer = landingWriter(dataDir.landingDir, config);
  writer.start();
  // A file that cannot be read, or is older than the registry in force, leaves the registry in
  // force; that is said once, not on every poll, and again if the failure changes.
  let lastFailure: string | null = null;
  const report = (failure: string) => {
    if (failure === lastFailure) return;
    lastFailure = failure;
    componentLog('registry').warn(
      `${failure}; events are still checked against the registry read before it`,
    );
  };
  const reload = () => {
    readRegistryFile(dataDir.registryPath).then(
      (snapshot) => {
        if (registry.replace(snapshot) || snapshot.version === registry.version) lastFailure = null;
        else
          report(
            `registry.json has version ${snapshot.version}, older than version ${registry.version} in force`,
          );
      },
      (error: Error) => report(error.message),
    );
  };
  watchFile(dataDir.registryPath, { interval: REGISTRY_POLL_MS }, reload);
  const intakePool = new IntakePool();
  return {
    registry,
    writer,
    sink: landingSink(writer),
    intakePool,
    corsOrigins: corsOriginsOf(config),
    rateLimitPerSecond: config.collector_rate_limit,
    refusedRateLimitPerSecond: config.refused_rate_limit,
    clock: systemClock,
    refresh: async () => undefined,
    async close() {
      unwatchFile(dataDir.registryPath, reload);
      await writer.close();
      await intakePool.close();
    },
  };
}

export interface BusCollectorOptions {
  /** The process's clock (`received_at`); the system's for `cds collect`. */
  clock?: Clock;
  /**
   * The owner's database, for `cds serve --bus`: a control-plane write is put in the bucket and
   * applied here before it is answered.
   */
  owner?: Context;
  liveness?: LivenessTiming;
}

/**
 * A collector on the bus (cluster mode, docs/cluster-design.md §3, §6): the registry comes from
 * the bus's registry bucket, watched; accepted events go to the events stream; the rate limits
 * are shared with the other live collectors. Needs no data dir. The connection stays the
 * caller's, closed after this runtime.
 */
export async function openBusCollector(
  bus: BusConnection,
  config: Config,
  options: BusCollectorOptions = {},
): Promise<BusCollectorRuntime> {
  const registry = new Registry({ version: 0, generated_at: '', tenants: [] });
  const watch = await watchRegistry(bus, registry);
  let ready = false;
  const registryLoaded = watch.loaded.then(() => {
    ready = true;
  });
  const sink = new BusSink(bus, publishPolicyOf(config));
  const keyWatch = await followBusKey(bus, sink).catch((error: unknown) => {
    watch.stop();
    throw error;
  });
  const liveness = await CollectorLiveness.start(
    bus,
    sink.collectorId,
    options.liveness ?? DEFAULT_LIVENESS,
  ).catch((error: unknown) => {
    watch.stop();
    keyWatch.stop();
    throw error;
  });
  const intakePool = new IntakePool();
  const { owner } = options;
  return {
    registry,
    sink,
    intakePool,
    corsOrigins: corsOriginsOf(config),
    rateLimitPerSecond: () => liveness.shareOf(config.collector_rate_limit),
    refusedRateLimitPerSecond: config.refused_rate_limit,
    clock: options.clock ?? systemClock,
    registryLoaded,
    isReady: () => ready,
    hasBusKey: () => sink.hasBusKey(),
    async refresh() {
      if (!owner) return;
      const snapshot = await publishRegistry(owner);
      for (const tenant of snapshot.tenants) registry.applyTenant(tenant);
    },
    async close() {
      await sink.close();
      await liveness.close();
      watch.stop();
      keyWatch.stop();
      await intakePool.close();
    },
  };
}
