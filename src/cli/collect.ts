import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { createBaseApp, listenOn } from '../api/base-app.js';
import { serveApiDocument } from '../api/openapi.js';
import { prometheusRoute } from '../api/routes/prometheus.js';
import { connectBus } from '../bus/connect.js';
import { startingThroughFailOver } from '../bus/start-retry.js';
import { busReadinessRoute } from '../collector/readiness.js';
import { collectorRoutes } from '../collector/routes.js';
import {
  type BusCollectorRuntime,
  type CollectorRuntime,
  openBusCollector,
  openFileCollector,
} from '../collector/runtime.js';
import { type Config, loadConfig } from '../config.js';
import { ValidationError } from '../errors.js';
import { openDataDir, REGISTRY_FILE } from '../store/data-dir.js';
import { componentLog } from '../telemetry/log.js';
import type { GlobalOptions } from './admin-request.js';
import { type BusFlags, busConfigInput, busSettingsOf } from './bus-flags.js';
import { cleaningUpOnFailure } from './on-failure.js';
import { closeOnSignals } from './serve.js';

export interface CollectFlags extends BusFlags {
  port?: string;
  host?: string;
}

interface OpenedCollector {
  collector: CollectorRuntime;
  /** What the startup record names as where events go. */
  destination: Record<string, unknown>;
  routes(app: FastifyInstance): void;
  /** After the collector, in this order. */
  close(): Promise<void>;
}

/** The embedded default: landing files of the data dir, the registry from its registry.json. */
async function openOnDataDir(config: Config): Promise<OpenedCollector> {
  // Checked before the data dir is opened, which would make it and a master key where none was.
  const registryPath = join(config.data_dir, REGISTRY_FILE);
  if (!existsSync(registryPath)) {
    throw ValidationError.field(
      'registry.json',
      `${registryPath} does not exist yet: create a tenant (cds tenants create) or start cds serve on this data dir once to write it`,
    );
  }
  const dataDir = openDataDir(config.data_dir, config.master_key);
  const collector = await openFileCollector(dataDir, config);
  return {
    collector,
    destination: { landing_dir: dataDir.landingDir },
    routes: (app) => prometheusRoute(app, { dataDir }),
    close: async () => undefined,
  };
}

/** Cluster mode: the events stream and the registry bucket; no data dir, no registry.json. */
async function openOnBus(config: Config): Promise<OpenedCollector> {
  const settings = busSettingsOf(config);
  if (!settings) throw new Error('openOnBus without a bus');
  const bus = await connectBus(settings, 'collector');
  const collector: BusCollectorRuntime = await cleaningUpOnFailure(
    startingThroughFailOver('the collector', () => openBusCollector(bus, config)),
    () => bus.close(),
  );
  return {
    collector,
    destination: { bus: settings.servers.join(',') },
    routes: (app) => busReadinessRoute(app, collector),
    close: () => bus.close(),
  };
}

/**
 * `cds collect`: a collector over the data dir's landing files, or with `--bus` over the events
 * stream, until SIGINT or SIGTERM.
 */
export async function runCollector(globals: GlobalOptions, options: CollectFlags): Promise<void> {
  const config = loadConfig({
    data_dir: globals.dataDir,
    port: options.port,
    host: options.host,
    ...busConfigInput(options),
  });
  const opened = config.bus ? await openOnBus(config) : await openOnDataDir(config);
  const { collector } = opened;
  const closeAll = async () => {
    await collector.close();
    await opened.close();
  };
  const app = createBaseApp(true);
  await app.register((scope) => collectorRoutes(scope, collector));
  opened.routes(app);
  serveApiDocument(app);
  const url = await cleaningUpOnFailure(listenOn(app, config.port, config.host), closeAll);
  const closed = closeOnSignals({
    close: async () => {
      await app.close();
      await closeAll();
    },
  });
  // As serve's: one record of the log.
  const where = Object.values(opened.destination).join('');
  componentLog('process').info(
    { url, ...opened.destination },
    `cds collector listening on ${url} (${config.bus ? 'bus' : 'landing'}: ${where})`,
  );
  await closed;
}
