import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { adminRequests } from '../helpers/admin-setup.js';
import { CDS_BIN, type ChildServer, runCli, runJson, startCli } from '../helpers/cli.js';
import { cdsInProcess, cdsJsonInProcess } from '../helpers/cli-in-process.js';
import { tablesOf } from '../helpers/database-file.js';
import { Receiver } from '../helpers/receiver.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

const manifest = (await import('../../package.json', { with: { type: 'json' } })).default as {
  version: string;
};

const LISTENING = /cds listening on (http:\/\/\S+)/;

/**
 * What only a real `cds` process shows: a server or collector holding the data dir, signals, log
 * lines, a closed pipe, and each way users run it (a local and a remote admin command, serve,
 * collect, ingest, demo). Setup and the commands around them run in this process (`cds`); the
 * rest of the CLI's behaviour is tested in cli.test.ts.
 */
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

  const cds = (...args: string[]) => cdsInProcess(['--data-dir', dir, ...args]);
  const cdsJson = <T = Record<string, unknown>>(...args: string[]) =>
    cdsJsonInProcess<T>(['--data-dir', dir, ...args]);
  const cdsBinary = (...args: string[]) => runCli(['--data-dir', dir, ...args]);
  const serve = async () => {
    const server = await startCli(
      ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
      LISTENING,
    );
    servers.push(server);
    return server;
  };

  describe('cds --version', () => {
    it('prints the version of package.json and exits 0', async () => {
      for (const flag of ['--version', '-V']) {
        const result = await runCli([flag]);
        expect(result.code).toBe(0);
        expect(result.stdout).toBe(`${manifest.version}\n`);
      }
    });
  });

  describe('tenants create', () => {
    it('prints the new tenant token once, on a line of its own', async () => {
      const result = await cdsBinary('tenants', 'create', 'acme', '--workspace', 'eu', '-w', 'us');
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

      const viaServer = await runJson<{ tenants: { tenant_id: string }[] }>([
        '--data-dir',
        dir,
        '--server',
        server.url,
        'tenants',
        'list',
      ]);
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
      const listed = await cdsInProcess([
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
      const refused = await cdsInProcess([
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

    const startCollect = async () => {
      const collector = await startCli(
        ['--data-dir', dir, 'collect', '--port', '0'],
        /collector listening on (http:\/\/\S+)/,
      );
      servers.push(collector);
      return collector;
    };

    beforeEach(async () => {
      await cds('tenants', 'create', 'acme', '-w', 'eu');
      await adminRequests(dir, [['PUT', '/v1/tenants/acme/event-types/page_viewed', {}]]);
    });

    /** Lands events through a `serve --no-ingest`, stopped once they are accepted. */
    const land = async (ids: string[]) => {
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet', '--no-ingest'],
        LISTENING,
      );
      servers.push(server);
      const browser = { 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' };
      const sent = await post(server.url, '/v1/events/batch', { events: ids.map(event) }, browser);
      expect(sent.status).toBe(202);
      await server.stop();
      servers = [];
    };

    it('cds ingest drains what serve --no-ingest landed, --status reports it, CDS_TRACE times it', async () => {
      await land(['a', 'b', 'c']);

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

    it('cds ingest saves its indexes as it ends, and the next cds ingest reads them instead of building them', async () => {
      await land(['a', 'b']);
      const first = await runCli(['--data-dir', dir, 'ingest'], { CDS_TRACE: '1' });
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toMatch(/^trace identifier index build \d+ ms$/m);
      expect(first.stderr).toMatch(/^trace dedup_index_scan \d+ ms$/m);
      for (const name of ['identifier', 'dedup'])
        expect(existsSync(join(dir, `cds.duckdb.${name}.index`))).toBe(true);

      await land(['c']);
      const second = await runCli(['--data-dir', dir, 'ingest'], { CDS_TRACE: '1' });
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout).toMatch(/^Ingested 1 files, 1 events/);
      expect(second.stderr).toMatch(/^trace identifier index load \d+ ms$/m);
      expect(second.stderr).not.toMatch(/^trace identifier index build/m);
      expect(second.stderr).not.toMatch(/^trace dedup_index_scan/m);
    });

    it('cds serve reads the saved indexes as it starts, before any event comes for a batch', async () => {
      await land(['a']);
      expect((await runCli(['--data-dir', dir, 'ingest'])).code).toBe(0);
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
        LISTENING,
        undefined,
        { CDS_TRACE: '1' },
      );
      servers.push(server);
      await waitUntil(
        () => /^trace dedup index load \d+ ms$/m.test(server.errors()),
        'the dedup index to be read',
      );
      await waitUntil(
        () => /^trace identifier index load \d+ ms$/m.test(server.errors()),
        'the identifier index to be read',
      );
      expect(server.errors()).not.toMatch(/^trace ingest batch/m);
      expect(server.errors()).not.toMatch(/^trace identifier index build/m);
    });

    it('cds collect accepts events from registry.json without opening the database', async () => {
      const collector = await startCollect();
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
      const collector = await startCollect();
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

      expect(await cdsBinary('collect', '--port', '0')).toMatchObject({
        code: 1,
        stderr: `${broken}\n`,
      });
    });

    it('cds collect follows admin commands run without a server: a revoked token stops at once', async () => {
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
      expect(usage.code).toBe(2);
      expect(usage.stderr).toContain(
        'name the customer with one of --profile-id, --email, --phone',
      );
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
  });

  describe('demo', () => {
    it('sets up the demo tenant, serves it and prints working tokens and curl lines', async () => {
      const demoDir = join(dir, 'demo');
      // The demo sends and ingests 5,000 events before it is ready: about 20 s on the 2-core
      // machine, and three times that with two other process files beside it.
      const demo = await startCli(
        ['--data-dir', demoDir, 'demo', '--port', '0'],
        /Press Ctrl-C/,
        120_000,
      );
      servers.push(demo);
      const text = demo.output();
      const url = /curl -s (http:\/\/[^/\s]+)\/v1\/whoami/.exec(text)?.[1];
      const workspaceToken = /workspace token\s+(cpw_\S+)/.exec(text)?.[1];
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const consoleUrl = /^Console: (\S+) /m.exec(text)?.[1];
      expect(consoleUrl).toBe(`${url}/console/`);
      expect((await fetch(`${consoleUrl}`)).status).toBe(200);
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
    }, 150_000);
  });
});
