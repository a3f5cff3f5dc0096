import fs from 'node:fs';
import { runCLI } from '../../src/cli/main.js';
import type { CliResult } from './cli.js';

type Write = typeof process.stdout.write;

/** Calls run one after another: each borrows the process's stdout, stderr, env and exit code. */
let previousRun: Promise<unknown> = Promise.resolve();

/**
 * Runs `cds` inside the test's process through the binary's own entry (`runCLI`: a fresh
 * `createCLI()` with `exitOverride()`, the same exit codes and error lines), without the ~1 s a
 * child process pays to start Node. What the command writes to stdout and stderr is captured,
 * log records too (pino writes to fd 2 with `fs.writeSync`). What is read once per process
 * (`CDS_TRACE`, `CDS_LOG_LEVEL`) keeps the test process's value: a test about those runs the
 * binary (`runCli` in ./cli.ts).
 */
export function cdsInProcess(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  const run = previousRun.then(() => runInProcess(args, env));
  previousRun = run.catch(() => undefined);
  return run;
}

export async function cdsJsonInProcess<T = Record<string, unknown>>(args: string[]): Promise<T> {
  const result = await cdsInProcess([...args, '--json']);
  if (result.code !== 0)
    throw new Error(`cds ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

type WriteSync = typeof fs.writeSync;

/** `fs.writeSync` with what goes to fd 1 and 2 captured. */
function captureDescriptors(stdout: string[], stderr: string[], writeSync: WriteSync): WriteSync {
  return ((fd: number, data: string | NodeJS.ArrayBufferView, ...rest: unknown[]) => {
    const chunks = fd === 1 ? stdout : fd === 2 ? stderr : undefined;
    if (!chunks) return (writeSync as (...args: unknown[]) => number)(fd, data, ...rest);
    const text =
      typeof data === 'string'
        ? data
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString();
    chunks.push(text);
    return Buffer.byteLength(text);
  }) as WriteSync;
}

function capture(chunks: string[]): Write {
  return ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString());
    const callback = rest.find((arg) => typeof arg === 'function') as (() => void) | undefined;
    callback?.();
    return true;
  }) as Write;
}

async function runInProcess(args: string[], env: NodeJS.ProcessEnv): Promise<CliResult> {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const { write: stdoutWrite } = process.stdout;
  const { write: stderrWrite } = process.stderr;
  const { writeSync } = fs;
  const savedEnv = new Map(Object.keys(env).map((name) => [name, process.env[name]]));
  const outputListeners = process.stdout.listeners('error');
  const warningListeners = process.listeners('warning');
  const savedExitCode = process.exitCode;
  // runCLI sets the private umask, as the binary does before making any file; the test process
  // gets its own back after.
  const savedUmask = process.umask(0o077);
  process.exitCode = undefined;
  Object.assign(process.env, env);
  process.stdout.write = capture(stdout);
  process.stderr.write = capture(stderr);
  fs.writeSync = captureDescriptors(stdout, stderr, writeSync);
  let code: number;
  try {
    await runCLI(['node', 'cds', ...args]);
    code = Number(process.exitCode ?? 0);
  } catch (error) {
    // What would reach Node's uncaught-error handler in the binary: a stack trace and exit 1.
    stderr.push(`${error instanceof Error ? error.stack : String(error)}\n`);
    code = 1;
  } finally {
    process.stdout.write = stdoutWrite;
    process.stderr.write = stderrWrite;
    fs.writeSync = writeSync;
    for (const [name, value] of savedEnv) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    // runCLI installs its process-wide handlers on every call: keep the test process's own.
    for (const listener of process.stdout.listeners('error'))
      if (!outputListeners.includes(listener))
        process.stdout.off('error', listener as (...args: unknown[]) => void);
    process.removeAllListeners('warning');
    for (const listener of warningListeners)
      process.on('warning', listener as (...args: unknown[]) => void);
    process.exitCode = savedExitCode;
    process.umask(savedUmask);
  }
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}
