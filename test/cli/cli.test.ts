import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { adminRequests } from '../helpers/admin-setup.js';
import { cdsInProcess, cdsJsonInProcess } from '../helpers/cli-in-process.js';
import { tablesOf } from '../helpers/database-file.js';
import { tempDir } from '../helpers/temp-dirs.js';

/**
 * The CLI's commands run in this process through the binary's entry point; what only a real
 * process shows (a server that holds the file, signals, log lines, a closed pipe) is in
 * cli.process.test.ts.
 */
describe('cds CLI', () => {
  let dir: string;

  beforeEach(() => {
    dir = tempDir();
  });

  const cds = (...args: string[]) => cdsInProcess(['--data-dir', dir, ...args]);
  const cdsJson = <T = Record<string, unknown>>(...args: string[]) =>
    cdsJsonInProcess<T>(['--data-dir', dir, ...args]);

  describe('tenants create', () => {
    it('fails with exit 1 and a clear message for an existing tenant', async () => {
      await cds('tenants', 'create', 'acme');
      const again = await cds('tenants', 'create', 'acme');
      expect(again.code).toBe(1);
      expect(again.stderr).toBe('cds: tenant acme already exists\n');
    });

    it('fails with exit 2 on bad usage', async () => {
      const result = await cds('tenants', 'create');
      expect(result.code).toBe(2);
      expect(result.stderr).toContain("missing required argument 'tenant'");
    });
  });

  describe('tokens', () => {
    it('issues, lists without secrets and revokes', async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const issued = await cdsJson<{ token: string; token_id: string }>(
        'tokens',
        'issue',
        '-t',
        'acme',
        '--kind',
        'workspace',
        '-w',
        'eu',
        '--name',
        'bi',
      );
      expect(issued.token).toMatch(/^cpw_/);
      const extra = await cds('tokens', 'issue-tenant', 'acme', '--name', 'ci');
      expect(extra.stdout).toMatch(/\ncpt_[0-9A-Za-z]{49}\n/);

      const table = await cds('tokens', 'list', '-t', 'acme');
      expect(table.stdout).toContain(issued.token_id);
      expect(table.stdout).not.toContain(issued.token);

      expect((await cds('tokens', 'revoke', issued.token_id, '-t', 'acme')).stdout).toBe(
        `Revoked ${issued.token_id}\n`,
      );
      const listed = await cdsJson<{ tokens: { token_id: string; revoked_at: string | null }[] }>(
        'tokens',
        'list',
        '-t',
        'acme',
      );
      expect(listed.tokens.find((t) => t.token_id === issued.token_id)?.revoked_at).not.toBeNull();
      const twice = await cds('tokens', 'revoke', issued.token_id, '-t', 'acme');
      expect(twice.code).toBe(1);
    });
  });

  describe('segments', () => {
    // The cases leave the data dir as they found it (no segment), so they share one.
    let segmentsDir: string;
    const inSegmentsDir = (...args: string[]) => cdsInProcess(['--data-dir', segmentsDir, ...args]);

    beforeAll(async () => {
      segmentsDir = tempDir();
      await inSegmentsDir('tenants', 'create', 'acme', '-w', 'eu');
      await adminRequests(segmentsDir, [
        ['PUT', '/v1/tenants/acme/event-types/order_completed', {}],
        [
          'PUT',
          '/v1/tenants/acme/metric-definitions',
          { metric_name: 'orders', event_name: 'order_completed', value_kind: 'count' },
        ],
      ]);
    });

    it('creates, lists, gets, previews, changes status and deletes', async () => {
      const predicate = '{"metric":"orders","op":"gte","value":3}';
      const created = await inSegmentsDir(
        'segments',
        'create',
        'repeat',
        '-t',
        'acme',
        '-w',
        'eu',
        '--name',
        'Repeat buyers',
        '--predicate',
        predicate,
      );
      expect(created.stdout).toBe('Created segment repeat (active)\n');

      const table = await inSegmentsDir('segments', 'list', '-t', 'acme');
      expect(table.stdout).toMatch(/eu\s+repeat\s+Repeat buyers\s+active\s+0/);

      const got = await cdsJsonInProcess<{ predicate: unknown }>([
        '--data-dir',
        segmentsDir,
        'segments',
        'get',
        'repeat',
        '-t',
        'acme',
        '-w',
        'eu',
      ]);
      expect(got.predicate).toEqual(JSON.parse(predicate));

      const preview = await cdsJsonInProcess([
        '--data-dir',
        segmentsDir,
        'segments',
        'preview',
        '-t',
        'acme',
        '-w',
        'eu',
        '--predicate',
        predicate,
      ]);
      expect(preview).toMatchObject({ matched_profiles: 0, scanned_profiles: 0, truncated: false });

      expect(
        (await inSegmentsDir('segments', 'status', 'repeat', 'paused', '-t', 'acme', '-w', 'eu'))
          .stdout,
      ).toBe('Segment repeat is paused\n');
      expect(
        (await inSegmentsDir('segments', 'delete', 'repeat', '-t', 'acme', '-w', 'eu')).stdout,
      ).toBe('Deleted segment repeat\n');
      const listed = await cdsJsonInProcess<{ segments: unknown[] }>([
        '--data-dir',
        segmentsDir,
        'segments',
        'list',
        '-t',
        'acme',
      ]);
      expect(listed.segments).toEqual([]);
    });

    it('reports a faulty predicate with its path and exit 1', async () => {
      const result = await inSegmentsDir(
        'segments',
        'create',
        'bad',
        '-t',
        'acme',
        '-w',
        'eu',
        '--name',
        'Bad',
        '--predicate',
        '{"metric":"orders","op":"contains","value":"x"}',
      );
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(
        'predicate.op: operator contains does not apply to number metric orders',
      );
    });

    it('refuses a predicate that is not JSON before doing anything', async () => {
      const result = await inSegmentsDir(
        'segments',
        'preview',
        '-t',
        'acme',
        '-w',
        'eu',
        '--predicate',
        'orders > 3',
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('must be JSON');
    });

    it('refuses a status outside the four', async () => {
      const result = await inSegmentsDir(
        'segments',
        'status',
        'repeat',
        'deleted',
        '-t',
        'acme',
        '-w',
        'eu',
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Allowed choices are draft, active, paused, archived');
    });
  });

  describe('servers it cannot reach or start', () => {
    it('says so when --server is no URL or nothing answers there, and exits 1', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const unreachable = await cds(
        '--server',
        `http://127.0.0.1:${port}`,
        '--token',
        'cpt_unused',
        'tenants',
        'list',
      );
      expect(unreachable).toMatchObject({
        code: 1,
        stderr: `cds: could not reach http://127.0.0.1:${port} (connect ECONNREFUSED 127.0.0.1:${port}); is cds serve running there?\n`,
      });
      const malformed = await cds('--server', '127.0.0.1:8080', 'tenants', 'list');
      expect(malformed).toMatchObject({
        code: 1,
        stderr: 'cds: --server: must be the URL of a cds serve, e.g. http://127.0.0.1:8080\n',
      });
    });

    it('says which port is taken when serve, collect or demo cannot listen, and exits 1', async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const holder = createServer();
      await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
      const { port } = holder.address() as AddressInfo;
      try {
        for (const command of [
          ['serve', '--quiet'],
          ['collect'],
          ['--data-dir', join(dir, 'demo'), 'demo'],
        ]) {
          const result = await cds(...command, '--port', String(port));
          expect({ command, code: result.code, stderr: result.stderr }).toEqual({
            command,
            code: 1,
            stderr: `cds: port: ${port} on 127.0.0.1 is in use by another process; choose another with --port or CDS_PORT\n`,
          });
        }
        expect((await cds('tenants', 'list')).code).toBe(0);
      } finally {
        holder.close();
      }
    });
  });

  describe('snapshot', () => {
    it("writes the analysts' tables to a new file, refuses to overwrite without --replace", async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const out = join(dir, 'analysts.duckdb');
      const written = await cds('snapshot', out);
      expect(written.code, written.stderr).toBe(0);
      expect(written.stdout).toBe(
        `Wrote ${out}: profiles 0, profile_metrics 0, segment_members 0, segment_history 0, events 0, segments 0\n`,
      );
      expect(await tablesOf(out)).toEqual([
        'events',
        'profile_metrics',
        'profiles',
        'segment_history',
        'segment_members',
        'segments',
      ]);
      const again = await cds('snapshot', out);
      expect(again.code).toBe(1);
      expect(again.stderr).toBe(`cds: path: ${out} already exists\n`);
      expect((await cds('snapshot', out, '--replace')).code).toBe(0);
      const nowhere = join(dir, 'no-such-folder', 'analysts.duckdb');
      expect(await cds('snapshot', nowhere)).toMatchObject({
        code: 1,
        stderr: `cds: path: the folder ${join(dir, 'no-such-folder')} does not exist\n`,
      });
    });
  });

  describe('generate-events', () => {
    const sample = fileURLToPath(new URL('../../fixtures/sample-events.ndjson', import.meta.url));
    const sampleArgs = ['generate-events', '--events', '60', '--visitors', '12', '--seed', '1'];

    it('writes the checked-in sample again byte for byte, to a file or to stdout', async () => {
      const out = join(dir, 'sample.ndjson');
      expect((await cdsInProcess([...sampleArgs, '--out', out])).code).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(readFileSync(sample, 'utf8'));
      const printed = await cdsInProcess(sampleArgs);
      expect(printed.code).toBe(0);
      expect(printed.stdout).toBe(readFileSync(sample, 'utf8'));
    });

    it('refuses a count that is not a positive whole number with exit 2, and an --out it cannot write with exit 1', async () => {
      const result = await cdsInProcess(['generate-events', '--events', '0']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('must be a positive whole number');
      const out = join(dir, 'no-such-folder', 'events.ndjson');
      const unwritable = await cdsInProcess(['generate-events', '--out', out]);
      expect(unwritable.code).toBe(1);
      expect(unwritable.stderr).toMatch(
        new RegExp(`^cds: --out: ${out.replaceAll('.', '\\.')} cannot be written: ENOENT`),
      );
    });
  });

  describe('demo', () => {
    it('will not wipe a folder it did not make', async () => {
      const foreign = join(dir, 'mine');
      mkdirSync(foreign);
      writeFileSync(join(foreign, 'notes.txt'), 'keep me');
      const result = await cdsInProcess(['--data-dir', foreign, 'demo', '--port', '0']);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('was not made by cds demo');
      expect(existsSync(join(foreign, 'notes.txt'))).toBe(true);
    });
  });
});
