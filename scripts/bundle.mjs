// Bundles the built CLI (dist/, from tsc) into dist/bundle/, which bin/cds.js runs: one file per
// command's work instead of hundreds of modules, each resolved, read and compiled on every start
// (docs/decisions.md "CLI start-up").
import { readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

/**
 * Packages bundled with our code: ESM packages of many small files, the bulk of what a command
 * resolves and reads at start. Every other package stays outside the bundle: the CommonJS ones
 * load through `require` at full speed (some are required on purpose, see store/duckdb.ts), the
 * native and worker-thread ones must stay files of their own, and the start-up test checks which
 * of them each command loads.
 */
const BUNDLED = new Set(['zod', 'fastify-type-provider-zod']);

const packageJson = JSON.parse(readFileSync('package.json', 'utf8'));
// @fastify/error, which fastify-type-provider-zod imports, is CommonJS like the rest of Fastify.
const external = [
  ...Object.keys(packageJson.dependencies).filter((name) => !BUNDLED.has(name)),
  '@fastify/error',
];

// Chunks are named by their content: those of an earlier build would stay beside the new ones.
rmSync('dist/bundle', { recursive: true, force: true });

await build({
  entryPoints: ['dist/cli/main.js', 'dist/collector/intake-worker.js'],
  outbase: 'dist',
  outdir: 'dist/bundle',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external,
  sourcemap: 'linked',
  logLevel: 'warning',
});
