import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));
const scripts = (
  JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as { scripts: Record<string, string> }
).scripts;

describe('package.json scripts', () => {
  it('run files that exist (the README starts with npm run demo)', () => {
    const files = Object.values(scripts).flatMap((script) =>
      [...script.matchAll(/\b(?:node|tsx)\s+([\w./-]+\.[jt]s)\b/g)].map((match) => match[1]),
    );
    expect(files).toContain('bin/cds.js');
    for (const file of files) expect(existsSync(`${root}${file}`), file).toBe(true);
  });

  it('start the demo through the cds demo command', () => {
    expect(scripts.demo).toMatch(/node bin\/cds\.js demo$/);
  });

  it('build nothing on install, so npm ci --omit=dev needs no compiler', () => {
    for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) {
      expect(scripts[hook], hook).toBeUndefined();
    }
  });

  it('build before the demo, the tests, the benchmarks and a pack', () => {
    for (const script of ['demo', 'test', 'bench', 'prepack']) {
      expect(scripts[script], script).toMatch(/\bnpm run build\b/);
    }
  });
});

/** npm's own range logic (a dependency of fastify and npm), for the check below. */
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string };
  satisfies(version: string, range: string): boolean;
};

describe('package-lock.json', () => {
  it('locks only packages that run on the oldest Node package.json allows (npm ci warns EBADENGINE otherwise)', () => {
    const manifest = JSON.parse(readFileSync(`${root}package.json`, 'utf8')) as {
      engines: { node: string };
    };
    const lock = JSON.parse(readFileSync(`${root}package-lock.json`, 'utf8')) as {
      packages: Record<string, { engines?: unknown }>;
    };
    const oldest = semver.minVersion(manifest.engines.node).version;
    const refusing = Object.entries(lock.packages).flatMap(([path, entry]) => {
      const node = (entry.engines as { node?: unknown } | undefined)?.node;
      return typeof node === 'string' && !semver.satisfies(oldest, node) ? [`${path} ${node}`] : [];
    });
    expect(refusing).toEqual([]);
  });
});
