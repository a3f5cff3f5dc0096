import { createRequire } from 'node:module';

/**
 * The DuckDB package, required rather than imported: imported from ESM, Node scans each of the
 * package's hundred CommonJS files for the names it exports (cjs-module-lexer), which doubled its
 * load time at every start of the CLI.
 */
export const duckdb = createRequire(import.meta.url)(
  '@duckdb/node-api',
) as typeof import('@duckdb/node-api');
