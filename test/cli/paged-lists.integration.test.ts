import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import { MAX_PAGE_SIZE } from '../../src/store/cursor.js';
import { openDataDir } from '../../src/store/data-dir.js';
import { Store } from '../../src/store/database.js';
import { insertToken } from '../../src/tenancy/tokens.js';
import { cdsInProcess, cdsJsonInProcess } from '../helpers/cli-in-process.js';
import { tempDir } from '../helpers/temp-dirs.js';

/** More than one page of the largest size the API gives. */
const COUNT = MAX_PAGE_SIZE + 7;

const tenantId = (index: number) => `t${String(index).padStart(4, '0')}`;

let dir: string;

beforeAll(async () => {
  dir = tempDir();
  const config = loadConfig({ data_dir: dir }, {});
  const store = await Store.open(openDataDir(config.data_dir, config.master_key).databasePath);
  const now = systemClock.now().toISOString();
  await store.write(async (session) => {
    for (let index = 0; index < COUNT; index += 1) {
      await session.run('insert_tenant', { tenant_id: tenantId(index), now });
    }
    for (let index = 0; index < COUNT; index += 1) {
      await insertToken(session, now, {
        tenantId: tenantId(0),
        kind: 'collector',
        workspaceId: null,
        name: `token ${index}`,
      });
    }
  });
  await store.close();
}, 120_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('CLI listings of more than one page', () => {
  it('cds tenants list prints every tenant once', async () => {
    const listed = await cdsJsonInProcess<{ tenants: { tenant_id: string }[] }>([
      '--data-dir',
      dir,
      'tenants',
      'list',
    ]);
    expect(listed.tenants.map((tenant) => tenant.tenant_id)).toEqual(
      Array.from({ length: COUNT }, (_, index) => tenantId(index)),
    );
    const table = await cdsInProcess(['--data-dir', dir, 'tenants', 'list']);
    expect(table.stdout).toContain(tenantId(COUNT - 1));
  });

  it('cds tokens list prints every token once', async () => {
    const listed = await cdsJsonInProcess<{ tokens: { token_id: string; name: string }[] }>([
      '--data-dir',
      dir,
      'tokens',
      'list',
      '-t',
      tenantId(0),
    ]);
    expect(listed.tokens).toHaveLength(COUNT);
    expect(new Set(listed.tokens.map((token) => token.token_id)).size).toBe(COUNT);
    expect(new Set(listed.tokens.map((token) => token.name)).size).toBe(COUNT);
  });
});
