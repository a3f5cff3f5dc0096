import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { putEventType } from '../src/catalog/event-types.js';
import { DEMO_METRICS } from '../src/cli/demo-setup.js';
import { systemClock } from '../src/clock.js';
import { loadConfig } from '../src/config.js';
import type { Context } from '../src/context.js';
import { metricDefinitionInputSchema } from '../src/metrics/definition-schema.js';
import { createMetricDefinition } from '../src/metrics/definitions.js';
import { openDataDir } from '../src/store/data-dir.js';
import { Store } from '../src/store/database.js';
import { createTenant } from '../src/tenancy/tenants.js';
import { KeyRing } from '../src/tenant-keys.js';

export const CDS_BIN = fileURLToPath(new URL('../bin/cds.js', import.meta.url));
export const TENANT = 'bench';
export const WORKSPACES = ['store-a', 'store-b'] as const;

/** Five of the demo store's metrics, one of them windowed: what a store defines. */
export const BENCH_METRICS = DEMO_METRICS.filter((metric) =>
  ['orders', 'revenue', 'page_views_7d', 'last_category', 'recent_categories'].includes(
    metric.metric_name,
  ),
);

const benchDirs: string[] = [];

/** A bench's data dir holds gigabytes of events; each goes when the run ends. */
export function removeBenchDirs(): void {
  for (const dir of benchDirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

/** A fresh folder under the system's temp dir, removed when the run ends. */
export function makeBenchDir(prefix = 'cds-bench-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  benchDirs.push(dir);
  return dir;
}

/**
 * A fresh data dir with the bench tenant and its event types, and the tenant's token; with
 * `metrics`, BENCH_METRICS defined too, so ingest computes their values as a store's does.
 */
export async function prepareDataDir(
  options: { metrics?: boolean } = {},
): Promise<{ dir: string; tenantToken: string }> {
  const dir = makeBenchDir();
  mkdirSync(dir, { recursive: true });
  const config = loadConfig({ data_dir: dir }, {});
  const dataDir = openDataDir(config.data_dir);
  const store = await Store.open(dataDir.databasePath);
  const context: Context = {
    store,
    config,
    dataDir,
    clock: systemClock,
    keyRing: new KeyRing(dataDir.masterKey),
  };
  const tenant = await createTenant(context, TENANT, [...WORKSPACES]);
  for (const name of ['page_viewed', 'product_viewed', 'signed_up'])
    await putEventType(context, TENANT, name, null);
  await putEventType(context, TENANT, 'order_completed', {
    dedupEntity: 'order',
    dedupKeyPaths: ['properties.order_id'],
  });
  if (options.metrics) {
    for (const metric of BENCH_METRICS)
      await createMetricDefinition(context, TENANT, metricDefinitionInputSchema.parse(metric));
  }
  await store.close();
  return { dir, tenantToken: tenant.token };
}

export interface Timed {
  seconds: number;
  /** User plus system CPU of the child. */
  cpuSeconds: number;
  maxRssMiB: number;
  stdout: string;
  stderr: string;
}

/** Runs `cds` under /usr/bin/time for wall time, CPU time and peak resident memory. */
export function timeCds(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      '/usr/bin/time',
      ['-f', 'TIME %e %M %U %S', process.execPath, CDS_BIN, ...args],
      {
        env: { ...process.env, ...env },
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('exit', (code) => {
      const match = /TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)/.exec(stderr);
      if (code !== 0 || !match)
        reject(new Error(`cds ${args.join(' ')} failed (${code}): ${stderr}`));
      else
        resolve({
          seconds: Number(match[1]),
          cpuSeconds: Number(match[3]) + Number(match[4]),
          maxRssMiB: Number(match[2]) / 1024,
          stdout,
          stderr,
        });
    });
  });
}

export function rate(count: number, seconds: number): string {
  return `${Math.round(count / seconds).toLocaleString('en')}/s`;
}

/** Starts a server process and resolves with its URL once `ready` matches its output or log. */
export function startChild(
  command: string[],
  ready: RegExp,
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; url: string }> {
  const [program, ...args] = command;
  const child = spawn(program as string, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    // cds announces its address in its log (stderr), which is shown as before.
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const match = ready.exec(output);
      if (match) resolve({ child, url: match[1] as string });
    };
    child.stdout?.on('data', read);
    child.stderr?.on('data', (chunk: Buffer) => {
      process.stderr.write(chunk);
      read(chunk);
    });
    child.once('exit', (code) => reject(new Error(`${command.join(' ')} exited ${code}`)));
  });
}

export async function stopChild(child: ChildProcess): Promise<void> {
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}
