import { existsSync } from 'node:fs';
import { createBaseApp, listenOn } from '../api/base-app.js';
import { serveApiDocument } from '../api/openapi.js';
import { prometheusRoute } from '../api/routes/prometheus.js';
import { collectorRoutes } from '../collector/routes.js';
import { openFileCollector } from '../collector/runtime.js';
import { loadConfig } from '../config.js';
import { ValidationError } from '../errors.js';
import { openDataDir } from '../store/data-dir.js';
import { componentLog } from '../telemetry/log.js';
import type { GlobalOptions } from './admin-request.js';
import { cleaningUpOnFailure } from './on-failure.js';
import { closeOnSignals } from './serve.js';

export interface CollectFlags {
  port?: string;
  host?: string;
}

/** `cds collect`: a collector over the data dir's landing files, until SIGINT or SIGTERM. */
export async function runCollector(globals: GlobalOptions, options: CollectFlags): Promise<void> {
  const config = loadConfig({
    data_dir: globals.dataDir,
    port: options.port,
    host: options.host,
  });
  const dataDir = openDataDir(config.data_dir, config.master_key);
  if (!existsSync(dataDir.registryPath)) {
    throw ValidationError.field(
      'registry.json',
      `${dataDir.registryPath} does not exist yet: create a tenant (cds tenants create) or start cds serve on this data dir once to write it`,
    );
  }
  const collector = await openFileCollector(dataDir, config);
  const app = createBaseApp(true);
  await app.register((scope) => collectorRoutes(scope, collector));
  prometheusRoute(app, { dataDir });
  serveApiDocument(app);
  const url = await cleaningUpOnFailure(listenOn(app, config.port, config.host), () =>
    collector.close(),
  );
  const closed = closeOnSignals({
    close: async () => {
      await app.close();
      await collector.close();
    },
  });
  // As serve's: one record of the log.
  componentLog('process').info(
    { url, landing_dir: dataDir.landingDir },
    `cds collector listening on ${url} (landing: ${dataDir.landingDir})`,
  );
  await closed;
}
