// Builds the console (console/, Preact) into dist/console/: one JavaScript and one CSS file with
// hashed names (cached for a year), index.html naming them (never cached), and a gzip and a
// brotli copy of each beside it, which @fastify/static sends to a browser that takes them. No
// inline script, so the Content-Security-Policy can forbid it (docs/console.md). The icon,
// favicon.svg, is linked from index.html and also answers `/favicon.ico` (src/api/console.ts).
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const OUT = 'dist/console';
rmSync(OUT, { recursive: true, force: true });
mkdirSync(OUT, { recursive: true });

const result = await build({
  entryPoints: ['console/main.tsx'],
  outdir: join(OUT, 'assets'),
  entryNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2020',
  jsx: 'automatic',
  jsxImportSource: 'preact',
  metafile: true,
  logLevel: 'warning',
});

const outputs = Object.keys(result.metafile.outputs);
const script = outputs.find((path) => path.endsWith('.js'));
const style = outputs.find((path) => path.endsWith('.css'));
if (!script || !style) throw new Error('the console build made no script or no style sheet');

writeFileSync(
  join(OUT, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cds console</title>
<link rel="icon" href="favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="assets/${basename(style)}">
<script type="module" src="assets/${basename(script)}"></script>
</head>
<body>
<div id="app"></div>
</body>
</html>
`,
);

const ICON = join(OUT, 'favicon.svg');
copyFileSync('console/favicon.svg', ICON);

for (const path of [...outputs, join(OUT, 'index.html'), ICON]) {
  const bytes = readFileSync(path);
  writeFileSync(`${path}.gz`, gzipSync(bytes, { level: 9 }));
  writeFileSync(
    `${path}.br`,
    brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }),
  );
}
