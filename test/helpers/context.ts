import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/api/app.js';
import type { Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { Context } from '../../src/context.js';
import { openDataDir } from '../../src/store/data-dir.js';
import { Store } from '../../src/store/database.js';

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
  close(): Promise<void>;
}

export function tempDir(prefix = 'cds-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** A real store in a fresh temp data dir, and the app over it. */
export async function openTestEnv(): Promise<TestEnv> {
  const dir = tempDir();
  const config = loadConfig({ data_dir: dir }, {});
  const dataDir = openDataDir(config.data_dir);
  const store = await Store.open(dataDir.databasePath);
  const clock = new TestClock();
  const context: Context = { store, config, dataDir, clock };
  const app = buildApp(context);
  return {
    dir,
    context,
    app,
    clock,
    async close() {
      await app.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
