import type { Clock } from '../clock.js';
import type { Context } from '../context.js';
import { LandingWriter, sealOrphans } from './landing-writer.js';
import { Registry, readRegistrySnapshot, writeRegistryFile } from './registry.js';

/** Design §2 defaults: seal at 64 MiB or after 2 s. */
export const LANDING_DEFAULTS = { maxFileBytes: 64 * 1024 * 1024, maxFileAgeMs: 2000 };

/** What the collector routes run on: the registry they check against and the writer they append with. */
export interface CollectorRuntime {
  registry: Registry;
  writer: LandingWriter;
  corsOrigins: Record<string, string[]>;
  rateLimitPerSecond: number;
  /** Stamps `received_at` on every line. */
  clock: Clock;
  /** Re-reads the registry after a control-plane change; a no-op where the database is elsewhere. */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

/** The collector inside the process that owns the database: the registry comes from it. */
export async function openOwnedCollector(context: Context): Promise<CollectorRuntime> {
  const snapshot = () =>
    context.store.read((session) =>
      readRegistrySnapshot(session, context.clock.now().toISOString()),
    );
  const first = await snapshot();
  await writeRegistryFile(context.dataDir.registryPath, first);
  const registry = new Registry(first);
  await sealOrphans(context.dataDir.landingDir);
  const writer = new LandingWriter({ root: context.dataDir.landingDir, ...LANDING_DEFAULTS });
  writer.start();
  return {
    registry,
    writer,
    corsOrigins: context.config.cors_origins,
    rateLimitPerSecond: context.config.collector_rate_limit,
    clock: context.clock,
    async refresh() {
      const next = await snapshot();
      registry.replace(next);
      await writeRegistryFile(context.dataDir.registryPath, next);
    },
    close: () => writer.close(),
  };
}
