import { chmodSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type ChildServer, runCli, runJson, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

const LISTENING = /cds listening on (http:\/\/\S+)/;

/** The permission bits of what is at `path`; none when a running server renamed it meanwhile. */
function modeOf(path: string): string | undefined {
  const info = statSync(path, { throwIfNoEntry: false });
  return info && (info.mode & 0o777).toString(8);
}

/**
 * Every folder and file under `root`, with its permission bits. A running server renames files
 * as it works (a `.partial` snapshot, an `.open` landing file): one gone between the listing and
 * its stat is seen under its new name by the next look.
 */
function modesUnder(root: string): Map<string, string> {
  const modes = new Map<string, string>([['.', modeOf(root) ?? 'missing']]);
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const mode = modeOf(path);
    if (mode) modes.set(path.slice(root.length + 1), mode);
  }
  return modes;
}

function expectPrivate(root: string): void {
  const loose = [...modesUnder(root)].filter(([path, mode]) => {
    const info = statSync(join(root, path), { throwIfNoEntry: false });
    if (!info) return false;
    return mode !== (info.isDirectory() ? '700' : '600');
  });
  expect(loose).toEqual([]);
}

describe('file modes', () => {
  let servers: ChildServer[] = [];
  afterEach(async () => {
    for (const server of servers) await server.stop();
    servers = [];
  });

  it('keeps the data dir 0700 and every file cds makes 0600, through serve, events, ingest, snapshots and an erasure', async () => {
    // A data dir cds creates itself, not one mkdtemp made private already.
    const dir = join(tempDir(), 'data');
    const cds = (...args: string[]) => runCli(['--data-dir', dir, ...args]);
    expect((await cds('tenants', 'create', 'acme', '-w', 'eu')).code).toBe(0);
    const server = await startCli(
      [
        '--data-dir',
        dir,
        'serve',
        '--port',
        '0',
        '--quiet',
        '--no-ingest',
        '--snapshot-every',
        '0.5',
      ],
      LISTENING,
    );
    servers.push(server);
    const tenant = (
      await runJson<{ token: string }>([
        '--data-dir',
        dir,
        '--server',
        server.url,
        'tokens',
        'issue-tenant',
        'acme',
      ])
    ).token;
    const collector = (
      await runJson<{ token: string }>([
        '--data-dir',
        dir,
        '--server',
        server.url,
        'tokens',
        'issue',
        '--tenant',
        'acme',
        '--kind',
        'collector',
        '--name',
        'backend',
      ])
    ).token;
    const put = await fetch(`${server.url}/v1/tenants/acme/event-types/order_placed`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${tenant}`, 'content-type': 'application/json' },
      body: '{}',
    });
    expect(put.status).toBe(201);
    const events = ['a', 'b', 'c'].map((id) => ({
      envelop_version: '1.0',
      id,
      name: 'order_placed',
      tenant_id: 'acme',
      workspace_id: 'eu',
      occured_at: '2026-03-01T10:00:00Z',
      properties: { identifiers: { email: `${id}@example.test` } },
    }));
    const sent = await fetch(`${server.url}/v1/server/events/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${collector}`, 'content-type': 'application/json' },
      body: JSON.stringify({ events }),
    });
    expect(sent.status).toBe(202);
    // The landing file, open and then sealed, holds plain emails until ingested.
    const landingFiles = () =>
      [...modesUnder(dir).keys()].filter((path) => /\.ndjson(\.open)?$/.test(path));
    expect(landingFiles()).not.toEqual([]);
    expectPrivate(dir);
    await waitUntil(() => landingFiles().some((path) => path.endsWith('.ndjson')), 'a sealed file');
    await waitUntil(() => modesUnder(dir).has('snapshot.duckdb'), 'the first snapshot');
    expectPrivate(dir);
    expect(await server.stop()).toBe(0);
    servers = [];

    // Two events a batch: the sealed file is split into parts before it is read.
    const ingested = await runCli(['--data-dir', dir, 'ingest'], { CDS_MAX_BATCH_EVENTS: '2' });
    expect(ingested.code, ingested.stderr).toBe(0);
    expect(ingested.stdout).toMatch(/3 events/);
    const outside = tempDir();
    expect((await cds('snapshot', join(outside, 'copy.duckdb'))).code).toBe(0);
    // An erasure rewrites the database into a copy and renames it over the file.
    const erased = await cds('erase', '--tenant', 'acme', '-w', 'eu', '--email', 'a@example.test');
    expect(erased.code, erased.stderr).toBe(0);
    expectPrivate(dir);
    expect([...modesUnder(dir).keys()]).toEqual(
      expect.arrayContaining([
        'cds.duckdb',
        'master.key',
        'registry.json',
        'snapshot.duckdb',
        'landing',
      ]),
    );
    expect(modesUnder(outside).get('copy.duckdb')).toBe('600');
  }, 90_000);

  it('makes a data dir made before this version private, and leaves what is not its own', async () => {
    const dir = join(tempDir(), 'old');
    const created = await runCli(['--data-dir', dir, 'tenants', 'create', 'acme', '-w', 'eu']);
    expect(created.code, created.stderr).toBe(0);
    // What an older cds left: the same files, readable by everyone.
    for (const [path, mode] of modesUnder(dir))
      chmodSync(join(dir, path), mode.startsWith('7') ? 0o755 : 0o644);
    mkdirSync(join(dir, 'landing', 'tenant=acme'), { recursive: true, mode: 0o755 });
    chmodSync(join(dir, 'landing'), 0o755);
    writeFileSync(join(dir, 'landing', 'tenant=acme', 'old.ndjson'), '{}\n', { mode: 0o644 });
    writeFileSync(join(dir, 'notes.txt'), 'kept\n', { mode: 0o644 });
    const listed = await runCli(['--data-dir', dir, 'tenants', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    const modes = modesUnder(dir);
    expect(modes.get('notes.txt')).toBe('644');
    modes.delete('notes.txt');
    expect(Object.fromEntries(modes)).toEqual({
      '.': '700',
      landing: '700',
      'landing/tenant=acme': '700',
      'landing/tenant=acme/old.ndjson': '600',
      'registry.json': '600',
      'master.key': '600',
      'cds.duckdb': '600',
    });
  });
});
