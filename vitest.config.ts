import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // DuckDB is native and each test opens its own file: forks isolate them best.
    pool: 'forks',
    setupFiles: ['test/setup.ts'],
  },
});
