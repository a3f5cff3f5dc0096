import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CDS_BIN, type ChildServer, runCli, runJson, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/context.js';
import { Receiver } from '../helpers/receiver.js';
import { waitUntil } from '../helpers/wait.js';

const LISTENING = /cds listening on (http:\/\/\S+)/;

describe('cds CLI', () => {
  let dir: string;
  let servers: ChildServer[];

  beforeEach(() => {
    dir = tempDir();
    servers = [];
  });
  afterEach(async () => {
    for (const server of servers) await server.stop();
  });

  const cds = (...args: string[]) => runCli(['--data-dir', dir, ...args]);
  const cdsJson = <T = Record<string, unknown>>(...args: string[]) =>
    runJson<T>(['--data-dir', dir, ...args]);
  const serve = async () => {
    const server = await startCli(
      ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
      LISTENING,
    );
    servers.push(server);
    return server;
  };

  describe('tenants create', () => {
    it('prints the new tenant token once, on a line of its own', async () => {
      const result = await cds('tenants', 'create', 'acme', '--workspace', 'eu', '-w', 'us');
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('Created tenant acme; workspaces: eu, us');
      const token = result.stdout.split('\n').find((line) => /^cpt_[0-9A-Za-z]{49}$/.test(line));
      expect(token).toBeDefined();

      const server = await serve();
      const whoami = await fetch(`${server.url}/v1/whoami`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(await whoami.json()).toMatchObject({ kind: 'tenant', tenant_id: 'acme' });
    });

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
    beforeEach(async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const server = await serve();
      const tenantToken = (
        await cdsJson<{ token: string }>('--server', server.url, 'tokens', 'issue-tenant', 'acme')
      ).token;
      const put = (path: string, body: unknown) =>
        fetch(`${server.url}${path}`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${tenantToken}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      await put('/v1/tenants/acme/event-types/order_completed', {});
      await put('/v1/tenants/acme/metric-definitions', {
        metric_name: 'orders',
        event_name: 'order_completed',
        value_kind: 'count',
      });
      await server.stop();
      servers = [];
    });

    it('creates, lists, gets, previews, changes status and deletes', async () => {
      const predicate = '{"metric":"orders","op":"gte","value":3}';
      const created = await cds(
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

      const table = await cds('segments', 'list', '-t', 'acme');
      expect(table.stdout).toMatch(/eu\s+repeat\s+Repeat buyers\s+active\s+0/);

      const got = await cdsJson<{ predicate: unknown }>(
        'segments',
        'get',
        'repeat',
        '-t',
        'acme',
        '-w',
        'eu',
      );
      expect(got.predicate).toEqual(JSON.parse(predicate));

      const preview = await cdsJson(
        'segments',
        'preview',
        '-t',
        'acme',
        '-w',
        'eu',
        '--predicate',
        predicate,
      );
      expect(preview).toMatchObject({ matched_profiles: 0, scanned_profiles: 0, truncated: false });

      expect(
        (await cds('segments', 'status', 'repeat', 'paused', '-t', 'acme', '-w', 'eu')).stdout,
      ).toBe('Segment repeat is paused\n');
      expect((await cds('segments', 'delete', 'repeat', '-t', 'acme', '-w', 'eu')).stdout).toBe(
        'Deleted segment repeat\n',
      );
      const listed = await cdsJson<{ segments: unknown[] }>('segments', 'list', '-t', 'acme');
      expect(listed.segments).toEqual([]);
    });

    it('reports a faulty predicate with its path and exit 1', async () => {
      const result = await cds(
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
      const result = await cds(
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
      const result = await cds('segments', 'status', 'repeat', 'deleted', '-t', 'acme', '-w', 'eu');
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('Allowed choices are draft, active, paused, archived');
    });
  });

  describe('one owner process', () => {
    it('names the process that holds the file and points at --server, which then works', async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const server = await serve();
      const blocked = await cds('tenants', 'list');
      expect(blocked.code).toBe(1);
      expect(blocked.stderr).toContain(`is held by process ${server.child.pid}`);
      expect(blocked.stderr).toContain('serve');
      expect(blocked.stderr).toContain('--server http://HOST:PORT');

      const viaServer = await cdsJson<{ tenants: { tenant_id: string }[] }>(
        '--server',
        server.url,
        'tenants',
        'list',
      );
      expect(viaServer.tenants.map((t) => t.tenant_id)).toEqual(['acme']);
    });

    it('sends a token given with --token instead of the operator credential', async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const issued = await cdsJson<{ token: string }>(
        'tokens',
        'issue',
        '-t',
        'acme',
        '--kind',
        'workspace',
        '-w',
        'eu',
        '--name',
        'r',
      );
      const server = await serve();
      const listed = await runCli([
        '--server',
        server.url,
        '--token',
        issued.token,
        'segments',
        'list',
        '-t',
        'acme',
        '--json',
      ]);
      expect(listed.code).toBe(0);
      const refused = await runCli([
        '--server',
        server.url,
        '--token',
        issued.token,
        'tokens',
        'list',
        '-t',
        'acme',
      ]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('this needs a tenant token');
    });

    it('closes cleanly on SIGTERM and lets the next command open the file', async () => {
      const server = await serve();
      expect(await server.stop()).toBe(0);
      expect((await cds('tenants', 'list')).code).toBe(0);
    });

    it('logs requests by path, so an email or phone looked up never reaches the log', async () => {
      const created = await cds('tenants', 'create', 'acme', '-w', 'eu');
      const tenantToken = created.stdout.split('\n').find((line) => line.startsWith('cpt_'));
      const server = await startCli(['--data-dir', dir, 'serve', '--port', '0'], LISTENING);
      servers.push(server);
      for (const query of ['email=Secret.Person%40example.com', 'phone=98765%2043210']) {
        const lookup = await fetch(
          `${server.url}/v1/tenants/acme/workspaces/eu/profiles/lookup?${query}`,
          { headers: { authorization: `Bearer ${tenantToken}` } },
        );
        expect(lookup.status).toBe(404);
      }
      expect(await server.stop()).toBe(0);
      servers = [];
      const log = server.output() + server.errors();
      expect(log).toContain('"url":"/v1/tenants/acme/workspaces/eu/profiles/lookup"');
      expect(log).not.toMatch(/secret|person|98765|43210/i);
    });

    it('says so when --server is no URL or nothing answers there, and exits 1', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const { port } = closed.address() as AddressInfo;
      await new Promise((resolve) => closed.close(resolve));
      const unreachable = await cds('--server', `http://127.0.0.1:${port}`, 'tenants', 'list');
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

  describe('ingest and collect', () => {
    const post = (url: string, path: string, body: unknown, headers: Record<string, string>) =>
      fetch(`${url}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    const event = (id: string) => ({
      envelop_version: '1.0',
      id,
      name: 'page_viewed',
      tenant_id: 'acme',
      workspace_id: 'eu',
      anon_id: `cookie:${id}`,
      occured_at: '2026-03-01T10:00:00Z',
      properties: {},
    });

    /** `cds collect` in place of the server that beforeEach started. */
    const collectInstead = async () => {
      await servers.pop()?.stop();
      const collector = await startCli(
        ['--data-dir', dir, 'collect', '--port', '0'],
        /collector listening on (http:\/\/\S+)/,
      );
      servers.push(collector);
      return collector;
    };

    beforeEach(async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const server = await serve();
      const tenant = (
        await cdsJson<{ token: string }>('--server', server.url, 'tokens', 'issue-tenant', 'acme')
      ).token;
      await fetch(`${server.url}/v1/tenants/acme/event-types/page_viewed`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tenant}`, 'content-type': 'application/json' },
        body: '{}',
      });
    });

    it('cds ingest drains what serve --no-ingest landed, --status reports it, CDS_TRACE times it', async () => {
      await servers.pop()?.stop();
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet', '--no-ingest'],
        LISTENING,
      );
      servers.push(server);
      const browser = { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' };
      const sent = await post(
        server.url,
        '/v1/events/batch',
        { events: [event('a'), event('b'), event('c')] },
        browser,
      );
      expect(sent.status).toBe(202);
      await server.stop();
      servers = [];

      const before = await cdsJson<{ backlog_files: number; events_ingested: number }>(
        'ingest',
        '--status',
      );
      expect(before).toMatchObject({ backlog_files: 1, events_ingested: 0 });
      const ingested = await runCli(['--data-dir', dir, 'ingest'], { CDS_TRACE: '1' });
      expect(ingested.code, ingested.stderr).toBe(0);
      expect(ingested.stdout).toMatch(/^Ingested 1 files, 3 events \(/);
      // CDS_TRACE times each step, which is how the ingest bench's figures are broken down.
      expect(ingested.stderr).toMatch(/^trace ingest_stage \d+ ms$/m);
      expect(ingested.stderr).toMatch(/^trace resolve identities \d+ ms$/m);
      expect(ingested.stderr).toMatch(/^trace ingest batch \d+ ms$/m);
      const after = await cdsJson<{ backlog_files: number; events_ingested: number }>(
        'ingest',
        '--status',
      );
      expect(after).toMatchObject({ backlog_files: 0, events_ingested: 3 });
    });

    it('cds collect accepts events from registry.json without opening the database', async () => {
      const collector = await collectInstead();
      const browser = { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' };
      expect((await post(collector.url, '/v1/events', event('x'), browser)).status).toBe(202);
      const unknown = await post(
        collector.url,
        '/v1/events',
        { ...event('y'), name: 'nope' },
        browser,
      );
      expect(unknown.status).toBe(422);
      // The database is free for the owner meanwhile.
      expect((await cds('tenants', 'list')).code).toBe(0);
      await collector.stop();
      servers = [];
      expect((await cds('ingest')).stdout).toMatch(/^Ingested 1 files, 1 events/);
    });

    it('cds collect keeps the registry it has when registry.json breaks, says so once, and will not start on it', async () => {
      const collector = await collectInstead();
      writeFileSync(join(dir, 'registry.json'), '{"tenants": ');
      const broken =
        'cds: registry.json: is not a registry the owner wrote; start cds serve on this data dir, or change anything with an admin command, to write it again';
      await waitUntil(
        () => collector.errors().includes('is not a registry'),
        'the broken registry to be reported',
      );
      const browser = { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' };
      expect((await post(collector.url, '/v1/events', event('kept'), browser)).status).toBe(202);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(collector.errors().split('is not a registry').length - 1).toBe(1);
      expect(await collector.stop()).toBe(0);
      servers = [];

      expect(await cds('collect', '--port', '0')).toMatchObject({ code: 1, stderr: `${broken}\n` });
    });

    it('cds collect follows admin commands run without a server: a revoked token stops at once', async () => {
      await servers.pop()?.stop();
      const issued = await cdsJson<{ token: string; token_id: string }>(
        'tokens',
        'issue',
        '-t',
        'acme',
        '--kind',
        'collector',
        '--name',
        'backend',
      );
      const collector = await startCli(
        ['--data-dir', dir, 'collect', '--port', '0'],
        /collector listening on (http:\/\/\S+)/,
      );
      servers.push(collector);
      const sendServerEvent = () =>
        post(
          collector.url,
          '/v1/server/events/batch',
          { events: [event('s1')] },
          {
            authorization: `Bearer ${issued.token}`,
          },
        );
      expect((await sendServerEvent()).status).toBe(202);

      expect((await cds('tokens', 'revoke', issued.token_id, '-t', 'acme')).code).toBe(0);
      await waitUntil(
        async () => (await sendServerEvent()).status !== 202,
        'the revoked token to be refused',
        5_000,
      );
      expect((await sendServerEvent()).status).toBe(401);
    });
  });

  describe('metrics, members, profiles and webhooks', () => {
    let receiver: Receiver;
    beforeEach(async () => {
      receiver = await Receiver.start();
    });
    afterEach(() => receiver.close());

    it('follows an order from the collector to a segment, a webhook and the CLI views', async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
        LISTENING,
        20_000,
        {
          CDS_WEBHOOK_URL: receiver.url,
          CDS_WEBHOOK_SECRET: `whsec_${Buffer.alloc(24, 7).toString('base64')}`,
          CDS_INGEST_INTERVAL_MS: '100',
        },
      );
      servers.push(server);
      const remote = (...args: string[]) => cds('--server', server.url, ...args);
      const tenant = (
        await cdsJson<{ token: string }>('--server', server.url, 'tokens', 'issue-tenant', 'acme')
      ).token;
      const api = (method: string, path: string, body: unknown, token = tenant) =>
        fetch(`${server.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
      await api('PUT', '/v1/tenants/acme/event-types/order_completed', {});
      await api('PUT', '/v1/tenants/acme/metric-definitions', {
        metric_name: 'orders',
        event_name: 'order_completed',
        value_kind: 'count',
      });
      const collector = (
        (await (
          await api('POST', '/v1/tenants/acme/tokens', { kind: 'collector', name: 'backend' })
        ).json()) as { token: string }
      ).token;
      const created = await remote(
        'segments',
        'create',
        'buyers',
        '-t',
        'acme',
        '-w',
        'eu',
        '--name',
        'Buyers',
        '--predicate',
        '{"metric":"orders","op":"gte","value":2}',
      );
      expect(created.code, created.stderr).toBe(0);
      const order = (id: string) => ({
        envelop_version: '1.0',
        id,
        name: 'order_completed',
        tenant_id: 'acme',
        workspace_id: 'eu',
        occured_at: '2026-03-01T10:00:00Z',
        properties: { identifiers: { email: 'ann@shop.test' } },
      });
      const sent = await api(
        'POST',
        '/v1/server/events/batch',
        { events: [order('o-1'), order('o-2')] },
        collector,
      );
      expect(sent.status).toBe(202);
      await waitUntil(() => receiver.received.length > 0, 'a webhook', 15_000);
      expect(receiver.bodies()).toMatchObject([
        { type: 'segment.entered', data: { segment_id: 'buyers', backfill: false } },
      ]);
      const profileId = receiver.bodies()[0]?.data.profile_id as string;

      const members = await cdsJson<{ members: { profile_id: string; email: string }[] }>(
        '--server',
        server.url,
        'segments',
        'members',
        'buyers',
        '-t',
        'acme',
        '-w',
        'eu',
      );
      expect(members.members).toMatchObject([{ profile_id: profileId, email: 'ann@shop.test' }]);
      const shown = await remote('profiles', 'show', profileId, '-t', 'acme', '-w', 'eu');
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/^orders\s+2$/m);
      expect(shown.stdout).toMatch(/^buyers\s+\S+$/m);
      expect(shown.stdout).toMatch(/^email\s+strong\s+ann@shop\.test\s+a\*\*\*@s\*\*\*\.test/m);
      const metrics = await remote('metrics', 'list', '-t', 'acme');
      expect(metrics.stdout).toMatch(/^\*\s+orders\s+order_completed\s+count/m);
      const deliveries = await cdsJson<{ webhooks: { status: string; attempts: number }[] }>(
        '--server',
        server.url,
        'webhooks',
        'list',
      );
      expect(deliveries.webhooks).toMatchObject([{ status: 'delivered', attempts: 1 }]);
      expect((await remote('webhooks', 'list', '--failed')).stdout).toBe('(none)\n');
      expect((await remote('webhooks', 'retry')).stdout).toBe('0 failed deliveries queued again\n');

      const erase = (...flags: string[]) =>
        remote('erase', '-t', 'acme', '-w', 'eu', '--email', 'ann@shop.test', ...flags);
      const dryRun = await erase('--dry-run');
      expect(dryRun.stdout).toBe(
        `Would erase profile ${profileId}: 1 profiles, 1 identifiers, 1 metrics, 1 segment memberships, 1 history entries, 2 events\n`,
      );
      expect((await erase()).stdout).toMatch(
        new RegExp(`^Erased profile ${profileId}: 1 profiles`),
      );
      const again = await erase();
      expect(again.code).toBe(1);
      expect(again.stderr).toBe('cds: no profile with that email in workspace eu\n');
      const usage = await remote('erase', '-t', 'acme', '-w', 'eu');
      expect(usage.code).toBe(1);
      expect(usage.stderr).toContain('give exactly one of --profile-id, --email, --phone');
      const audit = await remote('erasures', 'list', '-t', 'acme');
      expect(audit.code, audit.stderr).toBe(0);
      expect(audit.stdout).toMatch(
        /^ERASED_AT\s+WORKSPACE_ID\s+PROFILE_ID\s+ACTOR\s+EVENTS\s+PURGED_AT$/m,
      );
      expect(audit.stdout).toMatch(
        new RegExp(`^\\S+Z\\s+eu\\s+${profileId}\\s+operator\\s+2\\s+\\S+Z?$`, 'm'),
      );
    }, 90_000);
  });

  describe('snapshot', () => {
    const tablesOf = async (path: string) => {
      const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
      const connection = await instance.connect();
      const reader = await connection.runAndReadAll(
        'SELECT table_name FROM duckdb_tables() ORDER BY table_name',
      );
      const names = reader.getRowObjectsJson().map((row) => row.table_name);
      connection.closeSync();
      instance.closeSync();
      return names;
    };

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

    it('serve --snapshot-every keeps a snapshot in the data dir', async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet', '--snapshot-every', '0.5'],
        LISTENING,
      );
      servers.push(server);
      const path = join(dir, 'snapshot.duckdb');
      await waitUntil(() => existsSync(path), 'the first snapshot');
      expect(await server.stop()).toBe(0);
      servers = [];
      expect(await tablesOf(path)).toContain('profiles');
    });
  });

  describe('generate-events', () => {
    const sample = fileURLToPath(new URL('../../fixtures/sample-events.ndjson', import.meta.url));
    const sampleArgs = ['generate-events', '--events', '60', '--visitors', '12', '--seed', '1'];

    it('writes the checked-in sample again byte for byte, to a file or to stdout', async () => {
      const out = join(dir, 'sample.ndjson');
      expect((await runCli([...sampleArgs, '--out', out])).code).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe(readFileSync(sample, 'utf8'));
      const printed = await runCli(sampleArgs);
      expect(printed.code).toBe(0);
      expect(printed.stdout).toBe(readFileSync(sample, 'utf8'));
    });

    it('stops quietly with exit 0 when its reader goes away (cds generate-events | head)', async () => {
      const child = spawn(process.execPath, [CDS_BIN, 'generate-events', '--events', '1000000'], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      const exited = once(child, 'exit');
      const [first] = (await once(child.stdout, 'data')) as [Buffer];
      expect(JSON.parse(first.toString().split('\n')[0] as string)).toMatchObject({
        event: { envelop_version: '1.0' },
      });
      child.stdout.destroy();
      const [code] = (await exited) as [number | null];
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    });

    it('refuses a count that is not a positive whole number with exit 2, and an --out it cannot write with exit 1', async () => {
      const result = await runCli(['generate-events', '--events', '0']);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('must be a positive whole number');
      const out = join(dir, 'no-such-folder', 'events.ndjson');
      const unwritable = await runCli(['generate-events', '--out', out]);
      expect(unwritable.code).toBe(1);
      expect(unwritable.stderr).toMatch(
        new RegExp(`^cds: --out: ${out.replaceAll('.', '\\.')} cannot be written: ENOENT`),
      );
    });
  });

  describe('demo', () => {
    it('sets up the demo tenant, serves it and prints working tokens and curl lines', async () => {
      const demoDir = join(dir, 'demo');
      // The demo sends and ingests 5,000 events before it is ready: about 20 s on the 2-core machine.
      const demo = await startCli(
        ['--data-dir', demoDir, 'demo', '--port', '0'],
        /Press Ctrl-C/,
        60_000,
      );
      servers.push(demo);
      const text = demo.output();
      const url = /curl -s (http:\/\/[^/\s]+)\/v1\/whoami/.exec(text)?.[1];
      const workspaceToken = /workspace token\s+(cpw_\S+)/.exec(text)?.[1];
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const segments = await fetch(`${url}/v1/tenants/demo/segments?workspace_id=brand-eu`, {
        headers: { authorization: `Bearer ${workspaceToken}` },
      });
      const body = (await segments.json()) as { segments: { segment_id: string }[] };
      expect(body.segments.map((s) => s.segment_id)).toEqual([
        'big-spenders',
        'repeat-buyers',
        'shoe-browsers-no-order',
      ]);
      expect(text.match(/^ {2}curl /gm)).toHaveLength(4);
      expect(text).toMatch(/Sent \d{4} demo events through the collector/);
      expect(text).toMatch(/brand-eu +repeat-buyers +[1-9]\d* members/);
      expect(text).toMatch(
        /[1-9]\d* segment\.entered, \d+ segment\.exited, every signature verified/,
      );
      const table = await fetch(
        `${url}/v1/tenants/demo/workspaces/brand-eu/profiles/summary?limit=500`,
        {
          headers: { authorization: `Bearer ${workspaceToken}` },
        },
      );
      const customers = (await table.json()) as { profiles: { email: string | null }[] };
      expect(customers.profiles.length).toBeGreaterThan(100);
      expect(customers.profiles.some((row) => row.email?.endsWith('.example'))).toBe(true);
      expect(await demo.stop()).toBe(0);
      expect(existsSync(join(demoDir, 'cds.duckdb'))).toBe(true);
    }, 90_000);

    it('will not wipe a folder it did not make', async () => {
      const foreign = join(dir, 'mine');
      mkdirSync(foreign);
      writeFileSync(join(foreign, 'notes.txt'), 'keep me');
      const result = await runCli(['--data-dir', foreign, 'demo', '--port', '0']);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain('was not made by cds demo');
      expect(existsSync(join(foreign, 'notes.txt'))).toBe(true);
    });
  });
});
