import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { OutOfMemoryError } from '../../src/errors.js';
import { CHECKPOINTS_A_VACUUM } from '../../src/store/checkpoints.js';
import { openDataDir } from '../../src/store/data-dir.js';
import { Store } from '../../src/store/database.js';
import type { Session } from '../../src/store/session.js';
import { migrations } from '../../src/store/sql-files.js';
import { tempDir } from '../helpers/temp-dirs.js';

/** Every tenant, on one page of the operator's listing. */
const ALL_TENANTS = { after_tenant: null, limit: 1000 };

describe('data directory', () => {
  it('creates master.key once, 32 bytes, mode 0600', () => {
    const dir = tempDir();
    const first = openDataDir(dir);
    expect(first.masterKey).toHaveLength(32);
    expect(statSync(join(dir, 'master.key')).mode & 0o777).toBe(0o600);
    expect(openDataDir(dir).masterKey.equals(first.masterKey)).toBe(true);
  });

  it('takes CDS_MASTER_KEY instead of the file, and refuses a key of the wrong size', () => {
    const dir = tempDir();
    const hex = 'ab'.repeat(32);
    expect(openDataDir(dir, hex).masterKey.toString('hex')).toBe(hex);
    expect(() => openDataDir(dir, 'abcd')).toThrow(/32 bytes/);
  });
});

describe('Store', () => {
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it('applies every migration in order once and records it', async () => {
    const path = join(tempDir(), 'cds.duckdb');
    const store = await Store.open(path);
    const recorded = await store.read((session) =>
      session.allText<{ version: number; name: string }>(
        'SELECT version, name FROM schema_migrations ORDER BY version',
      ),
    );
    expect(recorded).toEqual(migrations().map(({ version, name }) => ({ version, name })));
    await store.close();
    const again = await Store.open(path);
    opened.push(again);
    const count = await again.read((session) =>
      session.allText<{ n: number }>('SELECT count(*) AS n FROM schema_migrations'),
    );
    expect(count[0]?.n).toBe(migrations().length);
  });

  it('rolls back a write that fails half-way', async () => {
    const store = await Store.open(join(tempDir(), 'cds.duckdb'));
    opened.push(store);
    await expect(
      store.write(async (session) => {
        await session.run('insert_tenant', { tenant_id: 'acme', now: '2026-01-01T00:00:00Z' });
        await session.run('insert_tenant', { tenant_id: 'acme', now: '2026-01-01T00:00:00Z' });
      }),
    ).rejects.toThrow(/duplicate key/);
    expect(await store.read((session) => session.all('list_tenants_page', ALL_TENANTS))).toEqual(
      [],
    );
    await store.write((session) =>
      session.run('insert_tenant', { tenant_id: 'acme', now: '2026-01-01T00:00:00Z' }),
    );
    expect(
      await store.read((session) => session.all('list_tenants_page', ALL_TENANTS)),
    ).toHaveLength(1);
  });

  it('never spills to disk, and holds DuckDB to the memory limit it is given', async () => {
    const store = await Store.open(join(tempDir(), 'cds.duckdb'), { memoryLimit: '384MB' });
    opened.push(store);
    const [settings] = await store.read((session) =>
      session.allText<{ memory_limit: string; temp_directory: string }>(
        "SELECT current_setting('memory_limit') AS memory_limit, current_setting('temp_directory') AS temp_directory",
      ),
    );
    expect(settings).toEqual({ memory_limit: '366.2 MiB', temp_directory: '' });
  });

  it('fails a write that needs more than the memory limit with out_of_memory, storing none of it', async () => {
    const store = await Store.open(join(tempDir(), 'cds.duckdb'), { memoryLimit: '64MB' });
    opened.push(store);
    const failed = store.write(async (session) => {
      await session.run('insert_tenant', { tenant_id: 'doomed', now: '2026-01-01T00:00:00Z' });
      await session.runText(
        "CREATE TEMP TABLE big AS SELECT range, repeat('x', 200) || range AS filler FROM range(2000000)",
      );
    });
    await expect(failed).rejects.toBeInstanceOf(OutOfMemoryError);
    await expect(failed).rejects.toMatchObject({
      status: 503,
      code: 'out_of_memory',
      message: expect.stringMatching(/^the database ran out of memory \(.* used\); .*memory_limit/),
    });
    await store.write((session) =>
      session.run('insert_tenant', { tenant_id: 'fine', now: '2026-01-01T00:00:00Z' }),
    );
    const tenants = await store.read((session) =>
      session.all<{ tenant_id: string }>('list_tenants_page', ALL_TENANTS),
    );
    expect(tenants.map((tenant) => tenant.tenant_id)).toEqual(['fine']);
  });

  it('replaces the file with a copy of its live rows, keeping indexes and settings, and goes on working', async () => {
    const path = join(tempDir(), 'cds.duckdb');
    const store = await Store.open(path, { memoryLimit: '384MB' });
    opened.push(store);
    await store.write(async (session) => {
      for (const tenant of ['keep', 'gone']) {
        await session.run('insert_tenant', { tenant_id: tenant, now: '2026-01-01T00:00:00Z' });
      }
      await session.runText(
        "CREATE TABLE filler AS SELECT range AS n, 'deleted-row-' || range AS marker FROM range(50000)",
      );
      await session.runText('DELETE FROM filler WHERE n % 2 = 1');
      await session.runText("DELETE FROM tenants WHERE tenant_id = 'gone'");
    });
    await store.checkpoint();
    const indexes = () =>
      store.read((session) =>
        session.allText('SELECT table_name, index_name, sql FROM duckdb_indexes() ORDER BY ALL'),
      );
    const indexesBefore = await indexes();
    expect(indexesBefore.length).toBeGreaterThan(0);

    const replaced = store.replaceWithCopy();
    // Queued behind the copy: it lands in the new file.
    const written = store.write((session) =>
      session.run('insert_tenant', { tenant_id: 'after', now: '2026-01-01T00:00:00Z' }),
    );
    await Promise.all([replaced, written]);

    expect(existsSync(`${path}.rewrite`)).toBe(false);
    const tenants = await store.read((session) =>
      session.all<{ tenant_id: string }>('list_tenants_page', ALL_TENANTS),
    );
    expect(tenants.map((tenant) => tenant.tenant_id).sort()).toEqual(['after', 'keep']);
    const [filler] = await store.read((session) =>
      session.allText<{ rows: number; odd: number }>(
        'SELECT count(*) AS rows, count(*) FILTER (WHERE n % 2 = 1) AS odd FROM filler',
      ),
    );
    expect(filler).toEqual({ rows: 25000, odd: 0 });
    expect(await indexes()).toEqual(indexesBefore);
    const [setting] = await store.read((session) =>
      session.allText<{ memory_limit: string }>(
        "SELECT current_setting('memory_limit') AS memory_limit",
      ),
    );
    expect(setting?.memory_limit).toBe('366.2 MiB');
    await expect(
      store.write((session) =>
        session.run('insert_tenant', { tenant_id: 'keep', now: '2026-01-01T00:00:00Z' }),
      ),
    ).rejects.toThrow(/Duplicate key .* violates primary key constraint/);
  });

  it('lets replayable writes commit while a rewrite copies the file and replays them onto the copy; other writes wait for the swap', async () => {
    const path = join(tempDir(), 'cds.duckdb');
    const store = await Store.open(path);
    opened.push(store);
    const insertTenant = (tenantId: string) => (session: Session) =>
      session.run('insert_tenant', { tenant_id: tenantId, now: '2026-01-01T00:00:00Z' });
    const tenantIds = async () =>
      (
        await store.read((session) =>
          session.all<{ tenant_id: string }>('list_tenants_page', ALL_TENANTS),
        )
      ).map((row) => row.tenant_id);
    await store.write(insertTenant('before'));
    await store.write(async (session) => {
      await session.runText(
        "CREATE TABLE filler AS SELECT range AS n, 'gone-row-' || range AS marker FROM range(20000)",
      );
    });

    const happened: string[] = [];
    let releaseCopy = () => {};
    const copyHeld = new Promise<void>((resolve) => {
      releaseCopy = resolve;
    });
    let copyReached = () => {};
    const inCopy = new Promise<void>((resolve) => {
      copyReached = resolve;
    });
    const replaced = store
      .replaceWithCopy({
        inCopy: async () => {
          copyReached();
          await copyHeld;
        },
      })
      .then(() => happened.push('swapped'));
    await inCopy;
    // Queued after the rewrite: lands in the new file once it is swapped in.
    const queued = store.write(insertTenant('queued')).then(() => happened.push('queued write'));
    // Passes the rewrite, and again on the copy, so the swap does not bring the rows back.
    await store.writeReplayable(async (session) => {
      await insertTenant('beside')(session);
      await session.runText('DELETE FROM filler WHERE n < 10000');
    });
    happened.push('replayable write');
    expect(await tenantIds()).toEqual(['before', 'beside']);
    expect(store.rewrites).toBe(0);

    releaseCopy();
    await Promise.all([replaced, queued]);
    expect(happened).toEqual(['replayable write', 'swapped', 'queued write']);
    expect(store.rewrites).toBe(1);
    expect(await tenantIds()).toEqual(['before', 'beside', 'queued']);
    const [filler] = await store.read((session) =>
      session.allText<{ rows: number; low: number }>(
        'SELECT count(*) AS rows, count(*) FILTER (WHERE n < 10000) AS low FROM filler',
      ),
    );
    expect(filler).toEqual({ rows: 10000, low: 0 });
  });

  it('removes a copy left by a rewrite that was cut off before its swap', async () => {
    const path = join(tempDir(), 'cds.duckdb');
    writeFileSync(`${path}.rewrite`, 'half a copy');
    writeFileSync(`${path}.rewrite.wal`, 'its log');
    opened.push(await Store.open(path));
    expect(existsSync(`${path}.rewrite`)).toBe(false);
    expect(existsSync(`${path}.rewrite.wal`)).toBe(false);
  });

  it('checkpoints a write that leaves more than 16 MiB of log, after its commit, and never inside one', async () => {
    const path = join(tempDir(), 'cds.duckdb');
    const store = await Store.open(path);
    opened.push(store);
    const [setting] = await store.read((session) =>
      session.allText<{ threshold: string }>(
        "SELECT current_setting('checkpoint_threshold') AS threshold",
      ),
    );
    // 1TB: DuckDB never checkpoints on its own.
    expect(setting?.threshold).toBe('931.3 GiB');
    const walBytes = () => (existsSync(`${path}.wal`) ? statSync(`${path}.wal`).size : 0);
    await store.write((session) =>
      session.runText(
        "CREATE TABLE small AS SELECT range AS n, 'row ' || range AS label FROM range(1000)",
      ),
    );
    expect(walBytes()).toBeGreaterThan(0);
    await store.write((session) =>
      session.runText(
        // Fewer rows than a row group, so they go to the log, not straight to the file.
        'CREATE TABLE large AS SELECT range AS n, repeat(md5(range::VARCHAR), 8) AS filler FROM range(100000)',
      ),
    );
    expect(walBytes()).toBeLessThan(1024 * 1024);
    const [rows] = await store.read((session) =>
      session.allText<{ small: number; large: number }>(
        'SELECT (SELECT count(*) FROM small) AS small, (SELECT count(*) FROM large) AS large',
      ),
    );
    expect(rows).toEqual({ small: 1000, large: 100000 });
  });

  it('checkpoints once the log passes the threshold it was opened with (checkpoint_threshold), and not before', async () => {
    const path = join(tempDir(), 'cds.duckdb');
    const store = await Store.open(path, { checkpointThreshold: 256 * 1024 });
    opened.push(store);
    const walBytes = () => (existsSync(`${path}.wal`) ? statSync(`${path}.wal`).size : 0);
    await store.write((session) => session.runText('CREATE TABLE notes (n INTEGER, body VARCHAR)'));
    await store.write((session) =>
      session.runText("INSERT INTO notes SELECT range, 'note ' || range FROM range(2000)"),
    );
    const below = walBytes();
    expect(below).toBeGreaterThan(0);
    expect(below).toBeLessThan(256 * 1024);
    await store.write((session) =>
      session.runText(
        'INSERT INTO notes SELECT range, repeat(md5(range::VARCHAR), 8) FROM range(20000)',
      ),
    );
    // 20,000 rows of 256 characters are about 5 MB of log: far past 256 KiB, so checkpointed.
    expect(walBytes()).toBeLessThan(below);
    const [row] = await store.read((session) =>
      session.allText<{ notes: number }>('SELECT count(*) AS notes FROM notes'),
    );
    expect(row?.notes).toBe(22000);
  });

  it('leaves deleted rows in their row groups at a checkpoint, and vacuums them one checkpoint in CHECKPOINTS_A_VACUUM', async () => {
    const store = await Store.open(join(tempDir(), 'cds.duckdb'));
    opened.push(store);
    const rowGroups = async () => {
      const [row] = await store.read((session) =>
        session.allText<{ groups: number }>(
          "SELECT count(DISTINCT row_group_id)::INTEGER AS groups FROM pragma_storage_info('thinned')",
        ),
      );
      return row?.groups;
    };
    await store.write(
      (session) =>
        session.runText('CREATE TABLE thinned AS SELECT range AS n FROM range(4 * 122880)'),
      { large: true },
    );
    expect(await rowGroups()).toBe(4);
    // A checkpoint asked for vacuums, and the count of those after writes starts from it.
    await store.checkpoint();
    // Nine rows in ten of every row group: the rest fit in one.
    await store.write((session) => session.runText('DELETE FROM thinned WHERE n % 10 <> 0'), {
      large: true,
    });
    const checkpointsLeft = CHECKPOINTS_A_VACUUM - 2;
    expect(await rowGroups()).toBe(4);
    for (let checkpoint = 0; checkpoint < checkpointsLeft; checkpoint += 1) {
      await store.write((session) => session.runText('CREATE OR REPLACE TABLE other AS SELECT 1'), {
        large: true,
      });
      expect(await rowGroups()).toBe(4);
    }
    await store.write((session) => session.runText('CREATE OR REPLACE TABLE other AS SELECT 1'), {
      large: true,
    });
    expect(await rowGroups()).toBe(1);
    const [row] = await store.read((session) =>
      session.allText<{ rows: number; vacuum: number }>(
        "SELECT count(*)::INTEGER AS rows, current_setting('max_vacuum_tasks')::INTEGER AS vacuum FROM thinned",
      ),
    );
    expect(row).toEqual({ rows: (4 * 122880) / 10, vacuum: 0 });
  });

  // Tables of 2 million rows, twice: about 30 s on the loaded 2-core machine, all of the default.
  it('leaves DuckDB no table blocks cached after a large write or when asked within one, keeps them otherwise, and puts its limit back', async () => {
    const cachedTableMiB = async (store: Store) => {
      const [row] = await store.read((session) =>
        session.allText<{ mib: number }>(
          "SELECT coalesce(sum(memory_usage_bytes), 0) / 1048576 AS mib FROM duckdb_memory() WHERE tag = 'BASE_TABLE'",
        ),
      );
      return Number(row?.mib);
    };
    const limit = (store: Store) =>
      store.read((session) =>
        session.allText<{ limit: string }>("SELECT current_setting('memory_limit') AS limit"),
      );
    const fill = (table: string) =>
      `CREATE TABLE ${table} AS SELECT range AS n, md5(range::VARCHAR) || md5((-range)::VARCHAR) AS filler FROM range(2000000)`;
    for (const memoryLimit of [undefined, '384MB']) {
      const store = await Store.open(join(tempDir(), 'cds.duckdb'), { memoryLimit });
      opened.push(store);
      await store.write((session) => session.runText(fill('kept')));
      expect(await cachedTableMiB(store)).toBeGreaterThan(48);
      await store.write((session) => session.runText(fill('released')), { large: true });
      expect(await cachedTableMiB(store)).toBeLessThanOrEqual(32);
      await store.write(async (session) => {
        await session.runText(
          'CREATE TEMP TABLE held AS SELECT n, length(filler) AS len FROM kept UNION ALL SELECT n, length(filler) FROM released',
        );
        expect(await cachedTableMiB(store)).toBeGreaterThan(48);
        await store.releaseTableCache();
        expect(await cachedTableMiB(store)).toBeLessThanOrEqual(32);
        await session.runText('CREATE TABLE copied AS SELECT count(*) AS n FROM held');
      });
      const afterOne = await limit(store);
      await store.write((session) => session.runText('CREATE TABLE more AS SELECT 1 AS n'), {
        large: true,
      });
      expect(await limit(store)).toEqual(afterOne);
      if (memoryLimit) expect(afterOne).toEqual([{ limit: '366.2 MiB' }]);
      const [counts] = await store.read((session) =>
        session.allText<{ kept: number; released: number }>(
          'SELECT (SELECT count(*) FROM kept) AS kept, (SELECT count(DISTINCT filler) FROM released) AS released, (SELECT n FROM copied) AS copied',
        ),
      );
      expect(counts).toEqual({ kept: 2000000, released: 2000000, copied: 4000000 });
    }
  }, 120_000);

  it('does not stop readers after a large write when DuckDB has little cached', async () => {
    const store = await Store.open(join(tempDir(), 'cds.duckdb'));
    opened.push(store);
    let finishRead = () => {};
    const readRunning = store.read(
      (session) =>
        new Promise<unknown>((resolve) => {
          finishRead = () => resolve(session.allText('SELECT 1 AS one'));
        }),
    );
    const written = store.write(
      (session) =>
        session.run('insert_tenant', { tenant_id: 'small', now: '2026-01-01T00:00:00Z' }),
      { large: true },
    );
    const first = await Promise.race([
      written.then(() => 'write'),
      new Promise((resolve) => setTimeout(() => resolve('timeout'), 2000)),
    ]);
    finishRead();
    await readRunning;
    expect(first).toBe('write');
  });

  it('serialises concurrent writes', async () => {
    const store = await Store.open(join(tempDir(), 'cds.duckdb'));
    opened.push(store);
    await Promise.all(
      Array.from({ length: 20 }, (_, index) =>
        store.write((session) =>
          session.run('insert_tenant', { tenant_id: `t${index}`, now: '2026-01-01T00:00:00Z' }),
        ),
      ),
    );
    expect(
      await store.read((session) => session.all('list_tenants_page', ALL_TENANTS)),
    ).toHaveLength(20);
  });
});

describe('configuration', () => {
  it('takes flags over CDS_* variables over cds.config.json over defaults', () => {
    const dir = tempDir();
    writeFileSync(
      join(dir, 'cds.config.json'),
      JSON.stringify({ port: 7000, host: '0.0.0.0', ingest_interval_ms: 250 }),
    );
    const config = loadConfig(
      { data_dir: dir, port: '9000' },
      { CDS_PORT: '8000', CDS_HOST: '127.0.0.2' },
    );
    expect(config).toMatchObject({
      port: 9000,
      host: '127.0.0.2',
      ingest_interval_ms: 250,
      max_batch_events: 250_000,
    });
    expect(loadConfig({}, { CDS_DATA_DIR: dir }).port).toBe(7000);
  });

  it('reads lists and per-tenant CORS origins from the environment', () => {
    const config = loadConfig(
      { data_dir: tempDir() },
      {
        CDS_PLAINTEXT_IDENTIFIER_TYPES: 'email',
        CDS_CORS_ORIGINS: '{"acme":["https://shop.acme.test"]}',
      },
    );
    expect(config.plaintext_identifier_types).toEqual(['email']);
    expect(config.cors_origins).toEqual({ acme: ['https://shop.acme.test'] });
  });

  it('names the faulty setting as it was given', () => {
    expect(() => loadConfig({ data_dir: tempDir() }, { CDS_PORT: 'eighty' })).toThrow(
      /^CDS_PORT: /,
    );
    expect(() => loadConfig({ data_dir: tempDir() }, { CDS_WEBHOOK_SECRET: 'secret' })).toThrow(
      /^CDS_WEBHOOK_SECRET: /,
    );
    expect(() => loadConfig({ data_dir: tempDir() }, { CDS_MEMORY_LIMIT: 'lots' })).toThrow(
      /^CDS_MEMORY_LIMIT: must be a size such as 384MB or 2GB$/,
    );
    expect(() => loadConfig({ data_dir: tempDir(), port: 70000 }, {})).toThrow(
      /^--port \(or CDS_PORT\): /,
    );
  });
});
