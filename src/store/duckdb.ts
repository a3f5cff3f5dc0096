import { requirePackage } from '../require-package.js';

/** The DuckDB package, required rather than imported (see require-package.ts). */
export const duckdb = requirePackage<typeof import('@duckdb/node-api')>('@duckdb/node-api');
