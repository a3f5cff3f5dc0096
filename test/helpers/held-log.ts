import fs from 'node:fs';
import type { RunnerTestSuite, TestContext } from 'vitest';

/**
 * The log records code under test writes in this process: pino writes them to fd 2 with
 * `fs.writeSync` (src/telemetry/log.ts), past vitest's console capture, so they came out among
 * its lines, hundreds a run. They are held per test and shown only when it fails, under its
 * name, through the console vitest attributes to the test. `CDS_TEST_LOG=live` writes them as
 * they come instead, for a run being debugged.
 */
const LIVE = process.env.CDS_TEST_LOG === 'live';

/** A test that logs without end keeps its last records; the count of the others is said. */
const MAX_HELD = 5_000;

let held: string[] = [];
let dropped = 0;

function hold(text: string): void {
  held.push(text);
  if (held.length > MAX_HELD) {
    held.shift();
    dropped += 1;
  }
}

/** Node's own `fs.writeSync`, kept where a worker that runs several files finds it again. */
const ORIGINAL = Symbol.for('cds.test.writeSync');
const saved = globalThis as { [ORIGINAL]?: typeof fs.writeSync };

/** Diverts fd 2 writes to the held records; every other write goes where it went. */
export function holdLogRecords(): void {
  if (LIVE) return;
  saved[ORIGINAL] ??= fs.writeSync;
  const writeSync = saved[ORIGINAL];
  fs.writeSync = ((fd: number, data: string | NodeJS.ArrayBufferView, ...rest: unknown[]) => {
    if (fd !== 2) return (writeSync as (...args: unknown[]) => number)(fd, data, ...rest);
    const text =
      typeof data === 'string'
        ? data
        : Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString();
    hold(text);
    return Buffer.byteLength(text);
  }) as typeof fs.writeSync;
}

/**
 * For each test: what was logged since the previous one ended (its hooks included) is shown if
 * it failed, then dropped. (vitest calls `onTestFinished` before `onTestFailed`.)
 */
export function showHeldLogOnFailure(context: TestContext): void {
  if (LIVE) return;
  context.onTestFinished(() => showIf(context.task.result?.state === 'fail', context.task.name));
}

/** After a file: what its last hooks logged, shown if a hook of it failed. */
export function showHeldLogOfFailedFile(file: RunnerTestSuite): void {
  if (LIVE) return;
  showIf(file.result?.state === 'fail', file.name);
}

function showIf(failed: boolean, name: string): void {
  if (failed && held.length > 0) {
    const skipped = dropped > 0 ? ` (the first ${dropped} left out)` : '';
    console.error(`The log of "${name}"${skipped}:\n${held.join('').trimEnd()}`);
  }
  held = [];
  dropped = 0;
}
