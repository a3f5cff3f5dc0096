import { rmSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import type { Clock } from '../../src/clock.js';
import { openEmbeddedCollector } from '../../src/collector/runtime.js';
import { type ConfigInput, loadConfig } from '../../src/config.js';
import type { Context } from '../../src/context.js';
import { LandingLoop } from '../../src/ingest/landing-loop.js';
import { openDataDir } from '../../src/store/data-dir.js';
import { Store } from '../../src/store/database.js';
import { KeyRing } from '../../src/tenant-keys.js';
import { tempDir } from './temp-dirs.js';

/** A clock tests can move. */
export class TestClock implements Clock {
  constructor(private current = new Date('2026-03-01T12:00:00.000Z')) {}
  now(): Date {
    return new Date(this.current);
  }
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

export interface TestEnv {
  dir: string;
  context: Context;
  app: FastifyInstance;
  clock: TestClock;
  /** Seals the collector's open files and ingests every sealed file (collector envs only). */
  ingest(): Promise<void>;
  /** Closes everything and removes the data dir, unless `keepDir` (to copy it once closed). */
  close(options?: { keepDir?: boolean }): Promise<void>;
}

/** Files that open test envs take their temp dirs from here too. */
export { tempDir };

export interface TestEnvOptions {
  collector?: boolean;
  maxBatchEvents?: number;
  config?: ConfigInput;
}

/** A real store in a fresh temp data dir, and the app over it; with `collector`, events too. */
export async function openTestEnv(options: TestEnvOptions = {}): Promise<TestEnv> {
  return openTestEnvIn(tempDir(), options);
}

/** As `openTestEnv`, over a data dir the caller filled (a copy of a seeded one). */
export async function openTestEnvIn(dir: string, options: TestEnvOptions = {}): Promise<TestEnv> {
  const config = loadConfig(
    {
      data_dir: dir,
      collector_rate_limit: 100_000,
      control_plane_rate_limit: 100_000,
      refused_rate_limit: 100_000,
      ...options.config,
    },
    {},
  );
  const dataDir = openDataDir(config.data_dir, config.master_key);
  const store = await Store.open(dataDir.databasePath);
  const clock = new TestClock();
  const context: Context = {
    store,
    config,
    dataDir,
    clock,
    keyRing: new KeyRing(dataDir.masterKey),
  };
  const collector = options.collector ? await openEmbeddedCollector(context) : undefined;
  const app = buildApp(context, { collector });
  const loop = new LandingLoop(context, {
    maxBatchEvents: options.maxBatchEvents ?? 500_000,
    intervalMs: 60_000,
  });
  return {
    dir,
    context,
    app,
    clock,
    async ingest() {
      await collector?.writer.sealAll();
      await loop.drain();
    },
    async close({ keepDir = false } = {}) {
      await app.close();
      await collector?.close();
      await store.close();
      if (!keepDir) rmSync(dir, { recursive: true, force: true });
    },
  };
}
