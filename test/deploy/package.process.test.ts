import { type ChildProcess, execFile, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Docker cannot run here, so this does what deploy/Dockerfile does, step by step: `npm pack` a
 * fresh copy of the sources (its prepack builds), unpack the package into a clean directory, `npm
 * ci --omit=dev` there, start `cds serve` with the image's settings and ask its healthcheck.
 */

const root = fileURLToPath(new URL('../../', import.meta.url));
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  name: string;
  version: string;
};
const dockerfile = readFileSync(join(root, 'deploy/Dockerfile'), 'utf8');
const unit = readFileSync(join(root, 'deploy/cds.service'), 'utf8');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** The tester's environment less what `npm test` adds (`npm_*`) and any cds setting of its own. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([key]) => !/^(npm_|cds_)/i.test(key)),
  );
  return { ...env, ...extra };
}

function run(file: string, args: string[], cwd: string, env = cleanEnv()): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

async function mustRun(file: string, args: string[], cwd: string): Promise<string> {
  const result = await run(file, args, cwd);
  if (result.code !== 0) {
    throw new Error(`${file} ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
  }
  return result.stdout;
}

/** What a fresh clone holds: the tracked files and the new ones git does not ignore. */
async function copySources(into: string): Promise<void> {
  const listed = await mustRun(
    'git',
    ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
    root,
  );
  for (const path of listed.split('\0')) {
    if (path === '' || path === 'node_modules' || !existsSync(join(root, path))) continue;
    mkdirSync(dirname(join(into, path)), { recursive: true });
    copyFileSync(join(root, path), join(into, path));
  }
  // The build's compiler comes from the dependencies already installed, not from the network.
  symlinkSync(realpathSync(join(root, 'node_modules')), join(into, 'node_modules'));
}

/** The Dockerfile's `ENV NAME=value` lines of its last stage, the runtime image. */
function imageEnv(): Record<string, string> {
  const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
  return Object.fromEntries(
    [...runtime.matchAll(/^ENV (\w+)=(\S+)$/gm)].map((match) => [match[1], match[2]]),
  ) as Record<string, string>;
}

/** The HEALTHCHECK's exec-form command, as Docker would run it inside the container. */
function healthcheckCommand(): string[] {
  const match = /^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile);
  if (!match?.[1]) throw new Error('deploy/Dockerfile has no exec-form HEALTHCHECK CMD');
  return JSON.parse(match[1]) as string[];
}

function startServe(
  bin: string,
  env: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [bin, 'serve', '--quiet'], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env,
  });
  let stdout = '';
  let stderr = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`cds serve did not get ready: ${stdout} ${stderr}`));
    }, 20_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    // The listening address is a record of the log, on stderr.
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
      const match = /cds listening on (\S+)/.exec(stderr);
      if (!match?.[1]) return;
      clearTimeout(timer);
      resolve({ child, url: match[1] });
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`cds serve exited ${code}: ${stderr}`));
    });
  });
}

let work: string;
let sources: string;
let installed: string;
let tarball: string;
let notBuilt: Run;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'cds-package-'));
  sources = join(work, 'sources');
  installed = join(work, 'installed');
  mkdirSync(installed);
  await copySources(sources);
  notBuilt = await run(process.execPath, [join(sources, 'bin/cds.js'), '--version'], sources);

  await mustRun('npm', ['pack', '--pack-destination', work], sources);
  tarball = join(work, `${manifest.name}-${manifest.version}.tgz`);
  await mustRun(
    'tar',
    ['-xzf', tarball, '--strip-components=1', '--no-same-owner', '-C', installed],
    work,
  );
  await mustRun(
    'npm',
    ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'],
    installed,
  );
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('a checkout that is not built', () => {
  it('says in one line to run npm run build, instead of a module-not-found stack', () => {
    expect(notBuilt.code).toBe(1);
    expect(notBuilt.stdout).toBe('');
    expect(notBuilt.stderr).toBe(
      `cds is not built here: run npm run build (${join(sources, 'dist/bundle/cli/main.js')} is missing)\n`,
    );
  });
});

describe('npm pack', () => {
  it('holds the build, the SQL and the lockfile, and no sources, tests or source maps', async () => {
    const entries = (await mustRun('tar', ['-tzf', tarball], work))
      .split('\n')
      .filter(Boolean)
      .map((entry) => entry.replace(/^package\//, ''));
    expect(entries).toEqual(
      expect.arrayContaining([
        'package.json',
        'npm-shrinkwrap.json',
        'bin/cds.js',
        'dist/bundle/cli/main.js',
        'dist/bundle/collector/intake-worker.js',
        'dist/browser/cds.js',
        'sql/ingest.sql',
        'sql/migrations/001_control_plane.sql',
      ]),
    );
    const strays = entries.filter(
      (entry) =>
        /^(src|test|bench|browser|fixtures|scripts|deploy)\//.test(entry) || entry.endsWith('.map'),
    );
    expect(strays).toEqual([]);
  });

  it('leaves the sources as they were: no lockfile copy stays behind', () => {
    expect(existsSync(join(sources, 'npm-shrinkwrap.json'))).toBe(false);
  });
});

describe('the package installed with npm ci --omit=dev', () => {
  it('has every production package of the lockfile and none only development needs', () => {
    const lock = JSON.parse(readFileSync(join(installed, 'npm-shrinkwrap.json'), 'utf8')) as {
      packages: Record<string, { dev?: boolean; optional?: boolean }>;
    };
    const paths = Object.entries(lock.packages).filter(([path]) => path !== '');
    const present = (path: string): boolean => existsSync(join(installed, path));
    const missing = paths.filter(
      ([path, entry]) => !entry.dev && !entry.optional && !present(path),
    );
    const development = paths.filter(([path, entry]) => entry.dev && present(path));
    expect(missing.map(([path]) => path)).toEqual([]);
    expect(development.map(([path]) => path)).toEqual([]);
    for (const tool of ['typescript', 'vitest', 'tsx', '@biomejs/biome']) {
      expect(present(`node_modules/${tool}`), tool).toBe(false);
    }
  });

  it('serves with the image settings: /healthz, the browser SDK, and the image healthcheck passes', async () => {
    const settings = imageEnv();
    const dataDir = join(work, 'data');
    const { child, url } = await startServe(
      join(installed, 'bin/cds.js'),
      cleanEnv({ ...settings, CDS_DATA_DIR: dataDir, CDS_PORT: '0' }),
    );
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      const port = new URL(url).port;
      const health = await fetch(`http://127.0.0.1:${port}/healthz`);
      expect(health.status).toBe(200);
      const sdk = await fetch(`http://127.0.0.1:${port}/v1/cds.js`);
      expect(sdk.status).toBe(200);

      const [program, ...args] = healthcheckCommand();
      expect(program).toBe('node');
      const check = await run(process.execPath, args, installed, cleanEnv({ CDS_PORT: port }));
      expect(check).toEqual({ code: 0, stdout: '', stderr: '' });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
    expect(readdirSync(dataDir)).toEqual(expect.arrayContaining(['master.key']));
  });
});

describe('deploy/Dockerfile', () => {
  it('builds in one stage and runs the packed package in a slim one without root', () => {
    expect(dockerfile).toMatch(/^FROM node:20-bookworm-slim AS build$/m);
    expect(dockerfile).toMatch(/^RUN npm pack /m);
    const runtime = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));
    expect(runtime).toMatch(/^\nFROM node:20-bookworm-slim\n/);
    expect(runtime).toMatch(/npm ci --omit=dev/);
    const users = [...runtime.matchAll(/^USER (\S+)$/gm)].map((match) => match[1]);
    expect(users.length).toBeGreaterThan(0);
    expect(users.at(-1)).not.toMatch(/^(root|0)(:|$)/);
  });

  it('keeps its data in a volume, listens on every interface and checks /healthz', () => {
    const settings = imageEnv();
    expect(settings.CDS_HOST).toBe('0.0.0.0');
    expect(dockerfile).toMatch(new RegExp(`^VOLUME ${settings.CDS_DATA_DIR}$`, 'm'));
    expect(dockerfile).toMatch(new RegExp(`^EXPOSE ${settings.CDS_PORT}$`, 'm'));
    expect(healthcheckCommand().join(' ')).toContain('/healthz');
  });
});

describe('deploy/cds.service', () => {
  it('passes systemd-analyze verify without a warning', async () => {
    // verify checks that ExecStart's program exists: use this machine's node wherever it lives.
    const checked = join(work, 'systemd', 'cds.service');
    mkdirSync(dirname(checked));
    writeFileSync(
      checked,
      unit.replace('ExecStart=/usr/bin/node ', `ExecStart=${process.execPath} `),
    );
    const result = await run('/usr/bin/systemd-analyze', ['verify', checked], work);
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('is hardened, and leaves MemoryDenyWriteExecute off for the JIT', () => {
    for (const setting of [
      'NoNewPrivileges=yes',
      'CapabilityBoundingSet=',
      'ProtectSystem=strict',
      'ProtectHome=yes',
      'PrivateTmp=yes',
      'StateDirectory=cds',
      'UMask=0077',
      'SystemCallFilter=@system-service',
      'Restart=on-failure',
    ]) {
      expect(unit).toMatch(new RegExp(`^${setting}$`, 'm'));
    }
    expect(unit).toMatch(/^RestrictAddressFamilies=/m);
    expect(unit).toMatch(/^EnvironmentFile=/m);
    expect(unit).not.toMatch(/^MemoryDenyWriteExecute=/m);
  });
});
