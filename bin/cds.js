#!/usr/bin/env node
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// A checkout holds no dist/ until it is built (npm ci no longer builds): say so in one line.
const main = new URL('../dist/bundle/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  process.stderr.write(
    `cds is not built here: run npm run build (${fileURLToPath(main)} is missing)\n`,
  );
  process.exit(1);
}
const { runCLI } = await import(main.href);
await runCLI(process.argv);
