import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/temp-dirs.js';

/** A data dir holding this `cds.config.json`. */
function dataDirWith(config: string): string {
  const dir = join(tempDir(), 'data');
  mkdirSync(dir);
  writeFileSync(join(dir, 'cds.config.json'), config);
  return dir;
}

/** One line on stderr, no stack trace, exit 2. */
function expectRefusedInOneLine(result: { code: number | null; stderr: string }, line: string) {
  expect(result.code).toBe(2);
  expect(result.stderr).toBe(`${line}\n`);
}

describe('settings cds cannot run with', () => {
  it('names a CDS_* variable that is not valid JSON, in one line', async () => {
    const result = await cdsInProcess(['--data-dir', join(tempDir(), 'data'), 'tenants', 'list'], {
      CDS_CORS_ORIGINS: '{',
    });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^cds: CDS_CORS_ORIGINS: is not valid JSON \(.+\)\n$/);
  });

  it('names where inside a CDS_* value the fault is', async () => {
    const result = await cdsInProcess(['--data-dir', join(tempDir(), 'data'), 'tenants', 'list'], {
      CDS_CORS_ORIGINS: '{"acme": "https://shop.test"}',
    });
    expectRefusedInOneLine(
      result,
      'cds: CDS_CORS_ORIGINS: Invalid input: expected array, received string at acme',
    );
  });

  it('refuses a key of cds.config.json that is no setting, naming it', async () => {
    const dir = dataDirWith('{"port": 9000, "webhook_urls": "https://x.test"}');
    expectRefusedInOneLine(
      await cdsInProcess(['--data-dir', dir, 'tenants', 'list']),
      `cds: ${join(dir, 'cds.config.json')}: "webhook_urls": is not a setting (docs: README, Configuration)`,
    );
  });

  it('refuses a cds.config.json that is not JSON, or not an object', async () => {
    const broken = dataDirWith('{"port": 9000,');
    const result = await cdsInProcess(['--data-dir', broken, 'serve']);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^cds: .+cds\.config\.json: is not valid JSON \(.+\)\n$/);
    const list = dataDirWith('[]');
    expectRefusedInOneLine(
      await cdsInProcess(['--data-dir', list, 'serve']),
      `cds: ${join(list, 'cds.config.json')}: must be a JSON object of settings`,
    );
  });

  it('names the flag or variable of a value out of range, and the file of a bad one', async () => {
    const dir = dataDirWith('{"ingest_interval_ms": "soon"}');
    expectRefusedInOneLine(
      await cdsInProcess(['--data-dir', dir, 'tenants', 'list']),
      `cds: ${join(dir, 'cds.config.json')}: ingest_interval_ms: Invalid input: expected number, received NaN`,
    );
    const result = await cdsInProcess(['--data-dir', join(tempDir(), 'data'), 'serve'], {
      CDS_PORT: '99999',
    });
    expectRefusedInOneLine(
      result,
      'cds: --port (or CDS_PORT): Too big: expected number to be <=65535',
    );
    expectRefusedInOneLine(
      await cdsInProcess(['--data-dir', join(tempDir(), 'data'), 'tenants', 'list'], {
        CDS_CHECKPOINT_THRESHOLD: 'a lot',
      }),
      'cds: CDS_CHECKPOINT_THRESHOLD: must be a size such as 16MB or 512KB',
    );
  });
});

describe('a database migrated by a newer cds', () => {
  it('is refused in one line naming both versions, and left as it was', async () => {
    const dir = join(tempDir(), 'data');
    expect(
      (await cdsInProcess(['--data-dir', dir, 'tenants', 'create', 'acme', '-w', 'eu'])).code,
    ).toBe(0);
    const database = join(dir, 'cds.duckdb');
    const instance = await DuckDBInstance.create(database);
    const connection = await instance.connect();
    const known = Number(
      (
        await connection.runAndReadAll('SELECT max(version) FROM schema_migrations')
      ).getRows()[0]?.[0],
    );
    await connection.run(
      `INSERT INTO schema_migrations (version, name) VALUES (${known + 1}, 'from_a_newer_cds')`,
    );
    connection.closeSync();
    instance.closeSync();
    const before = readFileSync(database);

    for (const args of [
      ['tenants', 'list'],
      ['serve', '--port', '0'],
    ]) {
      const result = await cdsInProcess(['--data-dir', dir, ...args]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `cds: ${database} was migrated by a newer cds (schema version ${known + 1}; this cds knows up to ${known}): run that cds or a newer one, or restore a backup made before the upgrade\n`,
      );
    }
    expect(readFileSync(database).equals(before)).toBe(true);
  });
});
