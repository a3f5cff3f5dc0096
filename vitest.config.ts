import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that run one at a time, after the rest: those that start `cds` processes or a browser
 * and wait for them within time limits (with another file loading both cores they missed those
 * limits), and the two property tests bounded by time, which would try fewer cases beside
 * another file.
 */
const ONE_AT_A_TIME = [
  'test/cli/**/*.test.ts',
  'test/deploy/**/*.test.ts',
  'test/browser/**/*.test.ts',
  'test/telemetry/**/*.test.ts',
  'test/api/fuzz.test.ts',
  'test/ingest/stream-model.integration.test.ts',
];

export default defineConfig({
  test: {
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
          exclude: [...configDefaults.exclude, ...ONE_AT_A_TIME],
          // Two files side by side on the 2-core machine: a test mostly waits for fsyncs.
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: ONE_AT_A_TIME,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
