import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Store } from '../../src/store/database.js';
import type { Session } from '../../src/store/session.js';
import { migrations } from '../../src/store/sql-files.js';
import { tempDir } from '../helpers/temp-dirs.js';

const ALL_TENANTS = { after_tenant: null, limit: 1000 };

const insertTenant = (tenantId: string) => (session: Session) =>
  session.run('insert_tenant', { tenant_id: tenantId, now: '2026-01-01T00:00:00Z' });

const tenantIds = async (store: Store) =>
  (
    await store.read((session) =>
      session.all<{ tenant_id: string }>('list_tenants_page', ALL_TENANTS),
    )
  )
    .map((tenant) => tenant.tenant_id)
    .sort();

describe('Store.copyTo (the database of a backup)', () => {
  const opened: Store[] = [];
  afterEach(async () => {
    for (const store of opened.splice(0)) await store.close();
  });

  it('copies one moment while writes and a file rewrite go on, into a file cds opens with its migrations', async () => {
    const dir = tempDir();
    const store = await Store.open(join(dir, 'cds.duckdb'));
    opened.push(store);
    await store.write(insertTenant('before'));
    await store.write((session) =>
      session.runText(
        "CREATE TABLE filler AS SELECT range AS n, repeat('x', 200) AS s FROM range(200000)",
      ),
    );

    const copyPath = join(dir, 'backup.duckdb');
    const copied = store.copyTo(
      copyPath,
      async (session) =>
        (await session.one<{ schema_version: number }>('store_schema_version'))?.schema_version,
    );
    // Asked for after the copy: none of them waits for it, and none is in it.
    const written = store.write(insertTenant('during'));
    const rewritten = store.replaceWithCopy();
    const read = tenantIds(store);
    const settled: string[] = [];
    for (const [name, promise] of [
      ['copy', copied],
      ['write', written],
      ['rewrite', rewritten],
    ] as const) {
      void promise.then(() => settled.push(name));
    }
    const [schemaVersion] = await Promise.all([copied, written, rewritten, read]);
    // The write did not wait for the copy; the rewrite's swap did.
    expect(settled).toEqual(['write', 'copy', 'rewrite']);

    expect(schemaVersion).toBe(Math.max(...migrations().map((migration) => migration.version)));
    expect(await tenantIds(store)).toEqual(['before', 'during']);
    await store.write(insertTenant('after'));

    const restored = await Store.open(copyPath);
    opened.push(restored);
    expect(await tenantIds(restored)).toEqual(['before']);
    const [filler] = await restored.read((session) =>
      session.allText<{ rows: number }>('SELECT count(*) AS rows FROM filler'),
    );
    expect(filler).toEqual({ rows: 200000 });
    await expect(restored.write(insertTenant('before'))).rejects.toThrow(
      /Duplicate key .* violates primary key constraint/,
    );
  });

  it('runs two copies one after the other, and the store closes only after them', async () => {
    const dir = tempDir();
    const store = await Store.open(join(dir, 'cds.duckdb'));
    await store.write(insertTenant('acme'));
    const first = store.copyTo(join(dir, 'a.duckdb'), async () => 'a');
    const second = store.copyTo(join(dir, 'b.duckdb'), async () => 'b');
    const closed = store.close();
    expect(await Promise.all([first, second, closed])).toEqual(['a', 'b', undefined]);
    for (const name of ['a.duckdb', 'b.duckdb']) {
      const copy = await Store.open(join(dir, name));
      opened.push(copy);
      expect(await tenantIds(copy)).toEqual(['acme']);
    }
  });
});
