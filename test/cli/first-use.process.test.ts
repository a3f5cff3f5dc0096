import { execFile } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ChildServer, type CliResult, runCli, startCli } from '../helpers/cli.js';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/temp-dirs.js';

const PACKAGE_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const manifest = (await import('../../package.json', { with: { type: 'json' } })).default as {
  version: string;
};

/** `npx cds …` from the clone's root, the form the README gives. */
function npxCds(args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile('npx', ['cds', ...args], { cwd: PACKAGE_ROOT }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** One line on stderr, no stack trace. */
function oneLine(result: CliResult): string {
  expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return result.stderr;
}

/**
 * What someone new to cds met from a fresh clone (issue 36, item 6): the command to type, a data
 * dir that is a file or is not there, a tenant that does not exist, two ways to name a customer,
 * and `cds ingest` beside a running server. Each as users run it: the binary, a child process.
 */
describe('cds on first use', () => {
  let dir: string;
  let servers: ChildServer[];
  beforeEach(() => {
    dir = tempDir();
    servers = [];
  });
  afterEach(async () => {
    for (const server of servers) await server.stop();
  });

  describe('npx cds in a clone', () => {
    it('runs the clone’s own cds, passing its exit code and messages through', async () => {
      const version = await npxCds(['--version']);
      expect(version).toMatchObject({ code: 0, stdout: `${manifest.version}\n` });
      const refused = await npxCds(['--data-dir', join(dir, 'none'), 'tenants', 'list']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`data dir ${join(dir, 'none')} does not exist`);
    });
  });

  describe('--data-dir naming a file', () => {
    it('is a setting cds cannot run with: one line naming the path, exit 2', async () => {
      const file = join(dir, 'notes.txt');
      writeFileSync(file, 'not a data dir\n');
      const listed = await runCli(['--data-dir', file, 'tenants', 'list']);
      expect(listed.code).toBe(2);
      expect(oneLine(listed)).toBe(
        `cds: --data-dir (or CDS_DATA_DIR): ${file} is a file; the data dir must be a folder\n`,
      );
      const demo = await runCli(['--data-dir', file, 'demo', '--port', '0']);
      expect(demo.code).toBe(2);
      expect(oneLine(demo)).toBe(listed.stderr);
      const served = await runCli(['serve', '--port', '0'], { CDS_DATA_DIR: join(file, 'data') });
      expect(served.code).toBe(2);
      expect(oneLine(served)).toBe(
        `cds: --data-dir (or CDS_DATA_DIR): ${join(file, 'data')} lies under a file; the data dir must be a folder\n`,
      );
    });
  });

  describe('a data dir that does not exist', () => {
    const missing = () => join(dir, 'typo');

    it.each([
      ['tenants', 'list'],
      ['segments', 'list', '-t', 'acme', '-w', 'eu'],
      ['ingest'],
      ['ingest', '--status'],
      ['snapshot', 'OUT/analysts.duckdb'],
      ['export', 'OUT/parquet'],
      ['backup', 'OUT/backup'],
      ['erasures', 'list', '-t', 'acme'],
    ])('cds %s … is refused, naming it, and nothing is made', async (...args) => {
      const result = await runCli([
        '--data-dir',
        missing(),
        ...args.map((arg) => arg.replace('OUT', dir)),
      ]);
      expect(result.code).toBe(1);
      expect(oneLine(result)).toBe(
        `cds: data dir ${missing()} does not exist: point --data-dir (or CDS_DATA_DIR) at the one cds serve uses; cds tenants create, serve, demo and restore start a new one\n`,
      );
      expect(readdirSync(dir)).toEqual([]);
    });

    it('an empty folder is no data dir either: no master key is made in it', async () => {
      const result = await runCli(['--data-dir', dir, 'metrics', 'list', '-t', 'acme']);
      expect(result.code).toBe(1);
      expect(oneLine(result)).toContain(`data dir ${dir} holds no cds database (cds.duckdb)`);
      expect(readdirSync(dir)).toEqual([]);
    });

    it('cds collect and --server without --token need what the owner made there', async () => {
      const collected = await runCli(['--data-dir', missing(), 'collect', '--port', '0']);
      expect(collected.code).toBe(1);
      expect(oneLine(collected)).toContain(
        `${join(missing(), 'registry.json')} does not exist yet`,
      );
      const remote = await runCli([
        '--data-dir',
        missing(),
        '--server',
        'http://127.0.0.1:9',
        'tenants',
        'list',
      ]);
      expect(remote.code).toBe(1);
      expect(oneLine(remote)).toBe(
        `cds: master.key: ${join(missing(), 'master.key')} does not exist: point --data-dir (or CDS_DATA_DIR) at the data dir cds serve uses, or give its CDS_MASTER_KEY, or pass a token with --token\n`,
      );
      expect(readdirSync(dir)).toEqual([]);
    });

    it('cds tenants create starts one', async () => {
      const created = await runCli(['--data-dir', missing(), 'tenants', 'create', 'acme']);
      expect(created.code, created.stderr).toBe(0);
      expect(existsSync(join(missing(), 'cds.duckdb'))).toBe(true);
      expect((await runCli(['--data-dir', missing(), 'tenants', 'list'])).code).toBe(0);
    });
  });

  describe('a tenant that does not exist', () => {
    beforeEach(async () => {
      expect(
        (await cdsInProcess(['--data-dir', dir, 'tenants', 'create', 'acme', '-w', 'eu'])).code,
      ).toBe(0);
    });

    it.each([
      ['segments', 'list', '-t', 'nosuch', '-w', 'eu'],
      [
        'segments',
        'create',
        'vip',
        '-t',
        'nosuch',
        '-w',
        'eu',
        '--name',
        'VIP',
        '--predicate',
        '{"metric":"orders","op":"gte","value":1}',
      ],
      ['metrics', 'list', '-t', 'nosuch'],
      ['tokens', 'list', '-t', 'nosuch'],
      ['tokens', 'issue', '-t', 'nosuch', '--kind', 'collector', '--name', 'backend'],
      ['erasures', 'list', '-t', 'nosuch'],
      ['erase', '-t', 'nosuch', '-w', 'eu', '--email', 'ann@shop.test'],
    ])('cds %s %s … says the tenant is unknown, exit 1', async (...args) => {
      const result = await runCli(['--data-dir', dir, ...args]);
      expect(result.code).toBe(1);
      expect(oneLine(result)).toBe('cds: tenant nosuch does not exist\n');
    });
  });

  describe('cds erase', () => {
    it('two ways to name the customer, or none, are bad usage: exit 2', async () => {
      const erase = (...args: string[]) =>
        runCli(['--data-dir', dir, 'erase', '-t', 'acme', '-w', 'eu', ...args]);
      const both = await erase('--email', 'ann@shop.test', '--phone', '+919876543210');
      expect(both.code).toBe(2);
      expect(both.stderr).toContain(
        "error: option '--email <email>' cannot be used with option '--phone <phone>'",
      );
      const none = await erase();
      expect(none.code).toBe(2);
      expect(none.stderr).toContain(
        'error: name the customer with one of --profile-id, --email, --phone',
      );
      expect(readdirSync(dir)).toEqual([]);
    });
  });

  describe('cds ingest beside cds serve', () => {
    beforeEach(async () => {
      expect((await cdsInProcess(['--data-dir', dir, 'tenants', 'create', 'acme'])).code).toBe(0);
    });
    const serve = async (...flags: string[]) => {
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet', ...flags],
        /cds listening on (http:\/\/\S+)/,
      );
      servers.push(server);
      return server;
    };

    it('says the server ingests itself and how to see how far, which then works', async () => {
      const server = await serve();
      const refused = await runCli(['--data-dir', dir, 'ingest']);
      expect(refused.code).toBe(1);
      expect(oneLine(refused)).toContain(`is held by process ${server.child.pid} (`);
      expect(refused.stderr).toContain(
        'It ingests the landing files itself; cds ingest --status --server http://HOST:PORT shows how far it got\n',
      );
      const status = await runCli([
        '--data-dir',
        dir,
        '--server',
        server.url,
        'ingest',
        '--status',
      ]);
      expect(status.code, status.stderr).toBe(0);
      expect(status.stdout).toContain('BACKLOG_FILES');
    });

    it('a server started with --no-ingest: stop it and ingest, or restart it', async () => {
      await serve('--no-ingest');
      const refused = await runCli(['--data-dir', dir, 'ingest']);
      expect(refused.code).toBe(1);
      expect(oneLine(refused)).toContain(
        'It runs with --no-ingest: stop it and run cds ingest, or start it again without --no-ingest\n',
      );
    });

    it('cds ingest takes no --server: exit 2, naming what does', async () => {
      const result = await runCli(['--data-dir', dir, '--server', 'http://127.0.0.1:9', 'ingest']);
      expect(result.code).toBe(2);
      expect(oneLine(result)).toBe(
        'cds: --server (or CDS_SERVER): cds ingest reads the landing files of this machine; a cds serve ingests its own (cds ingest --status --server URL shows how far it got)\n',
      );
    });
  });
});
