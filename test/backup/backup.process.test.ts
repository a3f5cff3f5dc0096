import { randomUUID } from 'node:crypto';
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { operatorToken } from '../../src/tenancy/operator.js';
import { type ChildServer, runCli, startCli } from '../helpers/cli.js';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import { callServer } from '../helpers/http.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

const LISTENING = /cds listening on (http:\/\/\S+)/;
const PROFILES = '/v1/tenants/acme/workspaces/eu/profiles';
/** Landing files sealed and ingested quickly, so the test waits little for profiles. */
const FAST = { CDS_LANDING_MAX_AGE_MS: '100', CDS_INGEST_INTERVAL_MS: '100' };

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? filesUnder(path) : [path];
  });
}

function order(email: string): Record<string, unknown> {
  return {
    envelop_version: '1.0',
    id: randomUUID(),
    name: 'order_completed',
    tenant_id: 'acme',
    workspace_id: 'eu',
    occured_at: '2026-03-01T10:00:00.000Z',
    properties: { identifiers: { email }, order_id: randomUUID() },
  };
}

describe('cds backup and cds restore', () => {
  let root: string;
  let servers: ChildServer[];

  beforeEach(() => {
    root = tempDir('cds-backup-');
    servers = [];
  });
  afterEach(async () => {
    for (const server of servers) await server.stop();
  });

  const serve = async (dataDir: string, ...flags: string[]) => {
    const server = await startCli(
      ['--data-dir', dataDir, 'serve', '--port', '0', '--quiet', ...flags],
      LISTENING,
      20_000,
      FAST,
    );
    servers.push(server);
    return server;
  };
  const stop = async (server: ChildServer) => {
    expect(await server.stop()).toBe(0);
    servers = servers.filter((running) => running !== server);
  };

  const lookup = async (server: ChildServer, token: string, email: string) => {
    const found = await callServer(server, token, 'GET', `${PROFILES}/lookup?email=${email}`);
    return found.status === 200 ? (found.body.profile_id as string) : null;
  };
  const orders = async (server: ChildServer, token: string, email: string) => {
    const id = await lookup(server, token, email);
    if (!id) return 0;
    return ((await callServer(server, token, 'GET', `${PROFILES}/${id}`)).body.metrics.orders ??
      0) as number;
  };

  /**
   * A data dir with tenant acme: an event type, a count metric and a collector token; Ann, Bob and
   * Cy ordered, and Bob was erased. Answers the tenant and collector tokens and the running server.
   */
  async function populated(dataDir: string) {
    const created = await cdsInProcess([
      '--data-dir',
      dataDir,
      '--json',
      'tenants',
      'create',
      'acme',
      '-w',
      'eu',
    ]);
    expect(created.code, created.stderr).toBe(0);
    const tenant = JSON.parse(created.stdout).tenant_token.token as string;
    const server = await serve(dataDir);
    await callServer(server, tenant, 'PUT', '/v1/tenants/acme/event-types/order_completed', {});
    await callServer(server, tenant, 'PUT', '/v1/tenants/acme/metric-definitions', {
      metric_name: 'orders',
      event_name: 'order_completed',
      value_kind: 'count',
    });
    const collector = (
      await callServer(server, tenant, 'POST', '/v1/tenants/acme/tokens', {
        kind: 'collector',
        name: 'shop',
      })
    ).body.token as string;
    const send = async (...emails: string[]) => {
      const sent = await callServer(server, collector, 'POST', '/v1/server/events/batch', {
        events: emails.map(order),
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    };
    await send('ann@shop.test', 'ann@shop.test', 'bob@shop.test', 'cy@shop.test');
    await waitUntil(
      async () => (await orders(server, tenant, 'cy@shop.test')) === 1,
      'the first events ingested',
    );
    const bob = (await lookup(server, tenant, 'bob@shop.test')) as string;
    expect((await callServer(server, tenant, 'DELETE', `${PROFILES}/${bob}`)).status).toBe(200);
    return { tenant, server, send, bob };
  }

  it('restores a backup made through --server while the server takes events: same profiles, tokens that work, the erased profile still erased', async () => {
    const source = join(root, 'source');
    const { tenant, server, send, bob } = await populated(source);
    const ann = await lookup(server, tenant, 'ann@shop.test');
    const cy = await lookup(server, tenant, 'cy@shop.test');

    // Orders keep coming while the backup is written; those acknowledged before it began must
    // all be in it, ingested or as landing lines.
    let acknowledged = 0;
    let sending = true;
    const sender = (async () => {
      while (sending) {
        await send('dee@shop.test');
        acknowledged += 1;
      }
    })();
    await waitUntil(() => acknowledged >= 5, 'orders sent before the backup');
    const acknowledgedBefore = acknowledged;
    const backupDir = join(root, 'backup');
    const backup = await runCli([
      '--data-dir',
      source,
      '--server',
      server.url,
      'backup',
      backupDir,
    ]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toContain(`Backed up to ${backupDir}: `);
    expect(backup.stdout).toContain('The master key is not in the backup');
    expect(backup.stderr).toMatch(/^backup done in \d+s: \d+ files, /m);
    sending = false;
    await sender;
    await stop(server);

    const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
    expect(manifest).toMatchObject({
      format: 1,
      cds_version: expect.any(String),
      schema_version: expect.any(Number),
      with_key: false,
    });
    expect(manifest.files.map((file: { path: string }) => file.path)).toContain('cds.duckdb');
    expect(manifest.files.map((file: { path: string }) => file.path)).not.toContain('master.key');
    expect(statSync(backupDir).mode & 0o777).toBe(0o700);
    for (const file of filesUnder(backupDir)) expect(statSync(file).mode & 0o777).toBe(0o600);
    // The copy holds live rows only: nothing of Bob is in any file of the backup.
    for (const file of filesUnder(backupDir)) {
      expect(readFileSync(file).includes(Buffer.from('bob@shop.test')), file).toBe(false);
    }

    const target = join(root, 'restored');
    const keyless = await cdsInProcess(['--data-dir', target, 'restore', backupDir]);
    expect(keyless.code).toBe(1);
    expect(keyless.stderr).toBe(
      `cds: the backup holds no master key (it was made without --with-key): copy the master.key of the data dir it came from to ${target}/master.key, or set CDS_MASTER_KEY, and restore again\n`,
    );

    mkdirSync(target, { mode: 0o700 });
    copyFileSync(join(source, 'master.key'), join(target, 'master.key'));
    const restored = await runCli(['--data-dir', target, 'restore', backupDir]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain(`into ${target}`);

    const again = await serve(target);
    expect((await callServer(again, tenant, 'GET', '/v1/whoami')).body).toMatchObject({
      kind: 'tenant',
      tenant_id: 'acme',
    });
    expect(await lookup(again, tenant, 'ann@shop.test')).toBe(ann);
    expect(await lookup(again, tenant, 'cy@shop.test')).toBe(cy);
    expect(await orders(again, tenant, 'ann@shop.test')).toBe(2);
    expect(await lookup(again, tenant, 'bob@shop.test')).toBeNull();
    expect((await callServer(again, tenant, 'GET', `${PROFILES}/${bob}`)).status).toBe(404);
    const erasures = (await callServer(again, tenant, 'GET', '/v1/tenants/acme/erasures')).body
      .erasures;
    expect(erasures.map((erasure: { profile_id: string }) => erasure.profile_id)).toEqual([bob]);
    await waitUntil(
      async () => (await orders(again, tenant, 'dee@shop.test')) >= acknowledgedBefore,
      'the orders acknowledged before the backup, ingested in the restored data dir',
    );
  }, 90_000);

  it('includes the master key with --with-key, so a fresh data dir restores without it, and the lines not yet ingested', async () => {
    const source = join(root, 'source');
    const populatedSource = await populated(source);
    const { tenant } = populatedSource;
    const ann = await lookup(populatedSource.server, tenant, 'ann@shop.test');
    await stop(populatedSource.server);
    // Without ingest, Eve's orders stay landing lines, sealed or in an open file.
    const server = await serve(source, '--no-ingest');
    const collector = (
      await callServer(server, tenant, 'POST', '/v1/tenants/acme/tokens', {
        kind: 'collector',
        name: 'x',
      })
    ).body.token as string;
    for (let sent = 0; sent < 3; sent++) {
      const answer = await callServer(server, collector, 'POST', '/v1/server/events/batch', {
        events: [order('eve@shop.test')],
      });
      expect(answer.status).toBe(202);
    }
    const backupDir = join(root, 'backup');
    const backup = await cdsInProcess([
      '--data-dir',
      source,
      '--server',
      server.url,
      'backup',
      backupDir,
      '--with-key',
    ]);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toContain('The master key is in the backup');
    await stop(server);
    const manifest = JSON.parse(readFileSync(join(backupDir, 'manifest.json'), 'utf8'));
    expect(manifest.with_key).toBe(true);
    expect(
      manifest.files.filter((file: { path: string }) =>
        file.path.startsWith('landing/tenant=acme/'),
      ),
    ).not.toEqual([]);
    expect(readFileSync(join(backupDir, 'master.key'))).toEqual(
      readFileSync(join(source, 'master.key')),
    );

    const target = join(root, 'restored');
    const restored = await cdsInProcess(['--data-dir', target, 'restore', backupDir]);
    expect(restored.code, restored.stderr).toBe(0);
    expect(restored.stdout).toContain('with its master key');
    const again = await serve(target);
    expect(await lookup(again, tenant, 'ann@shop.test')).toBe(ann);
    await waitUntil(
      async () => (await orders(again, tenant, 'eve@shop.test')) === 3,
      "Eve's landing lines ingested from the backup",
    );
  }, 60_000);

  it('refuses what it cannot do safely, each in one clear line', async () => {
    const source = join(root, 'source');
    const { server } = await populated(source);
    const operator = operatorToken(readFileSync(join(source, 'master.key')));
    const backups = '/v1/operator/backups';

    const busy = join(root, 'busy');
    mkdirSync(busy);
    writeFileSync(join(busy, 'notes.txt'), 'mine');
    expect(await callServer(server, operator, 'POST', backups, { dir: busy })).toEqual({
      status: 409,
      body: {
        error: {
          code: 'conflict',
          message: `${busy} is not empty; name a new or empty folder for the backup`,
        },
      },
    });
    const viaCli = await cdsInProcess([
      '--data-dir',
      source,
      '--server',
      server.url,
      'backup',
      busy,
    ]);
    expect(viaCli.code).toBe(1);
    expect(viaCli.stderr).toContain(`cds: ${busy} is not empty`);
    expect(
      (await callServer(server, operator, 'POST', backups, { dir: 'relative/dir' })).body,
    ).toEqual({
      error: {
        code: 'validation_failed',
        message: 'dir: must be an absolute path on the server',
        details: [{ path: 'dir', message: 'must be an absolute path on the server' }],
      },
    });
    const nul = await callServer(server, operator, 'POST', backups, { dir: `${root}/a\u0000b` });
    expect(nul.status).toBe(422);
    expect(nul.body.error.message).toBe('dir: holds a NUL byte, which no file name can');
    const tenantToken = await callServer(server, 'cpt_x', 'POST', backups, {
      dir: join(root, 'x'),
    });
    expect(tenantToken.status).toBe(401);

    // Without --server the file is held by the server: the usual pointer to --server.
    const held = await cdsInProcess(['--data-dir', source, 'backup', join(root, 'direct')]);
    expect(held.code).toBe(1);
    expect(held.stderr).toContain('is held by process');

    const backupDir = join(root, 'backup');
    expect(
      (await cdsInProcess(['--data-dir', source, '--server', server.url, 'backup', backupDir]))
        .code,
    ).toBe(0);
    const whileServed = await cdsInProcess(['--data-dir', source, 'restore', backupDir, '--force']);
    expect(whileServed.code).toBe(1);
    expect(whileServed.stderr).toMatch(
      /^cds: \S+cds\.duckdb is held by process \d+ \(.*serve.*\); stop it before restoring over it\n$/,
    );
    await stop(server);

    // Restoring over a data dir that holds a database needs --force.
    const over = await cdsInProcess(['--data-dir', source, 'restore', backupDir]);
    expect(over.code).toBe(1);
    expect(over.stderr).toBe(
      `cds: ${source} holds a database already; restore into a new data dir, or add --force to replace it\n`,
    );
    expect((await cdsInProcess(['--data-dir', source, 'restore', backupDir, '--force'])).code).toBe(
      0,
    );

    // Another master key is refused, before anything is written.
    const stranger = join(root, 'stranger');
    mkdirSync(stranger);
    writeFileSync(join(stranger, 'master.key'), Buffer.alloc(32, 7));
    const wrongKey = await cdsInProcess(['--data-dir', stranger, 'restore', backupDir]);
    expect(wrongKey.code).toBe(1);
    expect(wrongKey.stderr).toContain(
      'is another master key than the one the backup was made with',
    );
    expect(readdirSync(stranger)).toEqual(['master.key']);

    // A damaged file fails its checksum.
    const damaged = join(root, 'damaged');
    cpSync(backupDir, damaged, { recursive: true });
    const database = readFileSync(join(damaged, 'cds.duckdb'));
    database[database.length - 100] = (database.at(-100) ?? 0) ^ 0xff;
    writeFileSync(join(damaged, 'cds.duckdb'), database);
    const fresh = join(root, 'fresh');
    mkdirSync(fresh);
    copyFileSync(join(source, 'master.key'), join(fresh, 'master.key'));
    const corrupt = await cdsInProcess(['--data-dir', fresh, 'restore', damaged]);
    expect(corrupt.code).toBe(1);
    expect(corrupt.stderr).toBe(
      `cds: cds.duckdb in ${damaged} does not match its size and SHA-256 in manifest.json: the backup is damaged; restore another\n`,
    );

    // A backup from a newer schema is refused as the database itself would be.
    const newer = join(root, 'newer');
    cpSync(backupDir, newer, { recursive: true });
    const manifest = JSON.parse(readFileSync(join(newer, 'manifest.json'), 'utf8'));
    writeFileSync(
      join(newer, 'manifest.json'),
      JSON.stringify({ ...manifest, schema_version: 9999 }),
    );
    const tooNew = await cdsInProcess(['--data-dir', fresh, 'restore', newer]);
    expect(tooNew.code).toBe(1);
    expect(tooNew.stderr).toMatch(
      /^cds: \S+cds\.duckdb was migrated by a newer cds \(schema version 9999; this cds knows up to \d+\)/,
    );

    // A folder without a manifest is no backup (or an unfinished one).
    const stray = await cdsInProcess(['--data-dir', fresh, 'restore', busy]);
    expect(stray.code).toBe(1);
    expect(stray.stderr).toBe(
      `cds: ${busy} holds no manifest.json: it is not a cds backup, or one cut off before it finished\n`,
    );
    expect(readdirSync(fresh)).toEqual(['master.key']);
  }, 90_000);
});
