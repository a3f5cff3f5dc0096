import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CDS_BIN, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dirs.js';

/**
 * Preloaded into `cds`: at exit it writes, on stderr, the npm packages the process loaded as
 * CommonJS (every package below is CommonJS, whether required or imported).
 */
const REPORT_PACKAGES = `
process.on('exit', () => {
  const names = new Set();
  for (const file of Object.keys(require.cache)) {
    const match = /node_modules\\/((?:@[^/]+\\/)?[^/]+)/.exec(file);
    if (match) names.add(match[1]);
  }
  require('node:fs').writeSync(2, 'PACKAGES ' + JSON.stringify([...names]) + '\\n');
});
`;

let preload: string;
let dataDir: string;

function packagesLoadedBy(args: string[]): Promise<string[]> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-r', preload, CDS_BIN, ...args], (error, _stdout, stderr) => {
      const report = /^PACKAGES (.*)$/m.exec(stderr)?.[1];
      if (error || !report) reject(new Error(`cds ${args.join(' ')} failed: ${stderr}`));
      else resolve(JSON.parse(report) as string[]);
    });
  });
}

describe('what a cds command loads (docs/benchmarks.md, CLI start-up)', () => {
  beforeAll(async () => {
    const dir = tempDir();
    preload = join(dir, 'report-packages.cjs');
    writeFileSync(preload, REPORT_PACKAGES);
    dataDir = join(dir, 'data');
    expect((await runCli(['--data-dir', dataDir, 'tenants', 'create', 'acme'])).code).toBe(0);
  });

  it.each(['--version', '--help', 'tokens --help'])(
    'cds %s loads commander and nothing of the server, the database or the log',
    async (command) => {
      expect(await packagesLoadedBy(command.split(' '))).toEqual(['commander']);
    },
  );

  it('a local admin command loads the app without the API document, the collector, ajv or prom-client', async () => {
    const loaded = await packagesLoadedBy(['--data-dir', dataDir, 'tokens', 'list', '-t', 'acme']);
    expect(loaded).toEqual(expect.arrayContaining(['fastify', '@duckdb/node-api']));
    for (const name of [
      '@fastify/swagger',
      '@fastify/swagger-ui',
      '@fastify/cors',
      'piscina',
      'ajv',
      'libphonenumber-js',
      'pino-pretty',
      'prom-client',
    ]) {
      expect(loaded).not.toContain(name);
    }
  });
});
