import { accessSync, constants } from 'node:fs';
import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that run three at a time, after the rest (docs/testing.md). Those that start child
 * processes (`*.process.test.ts`: the `cds` binary, npm, nats-server) or drive a browser
 * (`*.browser.test.ts`) wait for them within time limits, which they missed beside in-process
 * files loading both cores. They mostly wait (for timers, polls, elections, children starting):
 * eight of the largest used 0.26 to 1.24 of a core, half of one on average (their CPU seconds over
 * their time in a quiet full run), so three side by side use about one and a half of the two
 * cores: 254 s for them all against about 340 s two at a time (2026-11-28, quiet). The property
 * tests (fuzz, stream model) are bounded by a count of cases, not by time, so they run with the
 * in-process files.
 */
const CHILD_PROCESSES = ['**/*.process.test.ts', '**/*.browser.test.ts'];

/**
 * Tests make hundreds of data dirs (test/helpers/context.ts `tempDir`, under the OS temp dir) and
 * every write to them is fsynced. On the RAM disk an fsync returns at once, where this machine's
 * disk makes each wait: files spent about half their time there. No test checks durability
 * against power loss (a crash test kills processes, whose writes the page cache keeps either
 * way); the disk-full tests mount their own small tmpfs.
 */
const RAM_DISK = '/dev/shm';

function writable(dir: string): boolean {
  try {
    accessSync(dir, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

export default defineConfig({
  test: {
    // Child processes (cds, npm, Chromium) inherit it.
    env: writable(RAM_DISK) ? { TMPDIR: RAM_DISK } : {},
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // DuckDB is native and each test opens its own file: forks isolate them best.
    pool: 'forks',
    setupFiles: ['test/setup.ts'],
    projects: [
      {
        extends: true,
        test: {
          name: 'in-process',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...CHILD_PROCESSES],
          // Two files side by side on the 2-core machine.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: CHILD_PROCESSES,
          maxWorkers: 3,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
