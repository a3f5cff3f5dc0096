import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ChildServer, runCli, runJson, startCli } from '../helpers/cli.js';
import { logProblems } from '../helpers/log.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

const LISTENING = /cds listening on (http:\/\/\S+)/;
const COLLECTING = /collector listening on (http:\/\/\S+)/;

describe('registry.json across processes', () => {
  let dir: string;
  let children: ChildServer[];

  beforeEach(() => {
    dir = tempDir();
    children = [];
  });
  afterEach(async () => {
    for (const child of children) await child.stop();
  });

  const cds = (...args: string[]) => runCli(['--data-dir', dir, ...args]);
  const cdsJson = <T>(...args: string[]) => runJson<T>(['--data-dir', dir, ...args]);
  const start = async (args: string[], ready: RegExp) => {
    const child = await startCli(['--data-dir', dir, ...args], ready);
    children.push(child);
    return child;
  };
  const version = () =>
    (JSON.parse(readFileSync(join(dir, 'registry.json'), 'utf8')) as { version: number }).version;
  const api = (url: string, token: string, method: string, path: string) =>
    fetch(`${url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(method === 'DELETE' ? {} : { 'content-type': 'application/json' }),
      },
      body: method === 'DELETE' ? undefined : '{}',
    });
  const event = (tenant: string, workspace: string, name: string) => ({
    envelop_version: '1.0',
    id: crypto.randomUUID(),
    name,
    tenant_id: tenant,
    workspace_id: workspace,
    anon_id: 'cookie:r',
    occured_at: '2026-03-01T10:00:00Z',
    properties: {},
  });
  const sendServerEvent = (url: string, token: string, tenant: string, workspace: string) =>
    fetch(`${url}/v1/server/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(event(tenant, workspace, 'page_viewed')),
    });
  const issueCollectorToken = (tenant: string, ...server: string[]) =>
    cdsJson<{ token: string; token_id: string }>(
      ...server,
      'tokens',
      'issue',
      '-t',
      tenant,
      '--kind',
      'collector',
      '--name',
      'backend',
    );

  it('cds collect refuses a token within 1 s of its revocation, and follows each next owner of the database', async () => {
    const created = await cdsJson<{ tenant_token: { token: string } }>(
      'tenants',
      'create',
      'acme',
      '-w',
      'eu',
    );
    const afterCli = version();
    const server = await start(['serve', '--port', '0', '--quiet'], LISTENING);
    expect(version()).toBeGreaterThan(afterCli);
    const tenantToken = created.tenant_token.token;
    expect(
      (await api(server.url, tenantToken, 'PUT', '/v1/tenants/acme/event-types/page_viewed'))
        .status,
    ).toBe(201);
    const collector = await start(['collect', '--port', '0'], COLLECTING);

    for (let round = 0; round < 3; round += 1) {
      const issued = await issueCollectorToken('acme', '--server', server.url);
      await waitUntil(
        async () =>
          (await sendServerEvent(collector.url, issued.token, 'acme', 'eu')).status === 202,
        'cds collect to accept the new token',
        1_000,
      );
      const revoked = await api(
        server.url,
        tenantToken,
        'DELETE',
        `/v1/tenants/acme/tokens/${issued.token_id}`,
      );
      expect(revoked.status).toBe(204);
      // The process that revoked it refuses it at once; cds collect within a second.
      expect((await sendServerEvent(server.url, issued.token, 'acme', 'eu')).status).toBe(401);
      await waitUntil(
        async () =>
          (await sendServerEvent(collector.url, issued.token, 'acme', 'eu')).status === 401,
        'cds collect to refuse the revoked token',
        1_000,
      );
    }

    // The next owner is an admin command without a server: its versions are higher still.
    const served = version();
    await server.stop();
    const next = await issueCollectorToken('acme');
    expect(version()).toBeGreaterThan(served);
    await waitUntil(
      async () => (await sendServerEvent(collector.url, next.token, 'acme', 'eu')).status === 202,
      'cds collect to take the file of the next owner',
      1_000,
    );
    expect(logProblems(collector.errors())).toEqual([]);
  });

  it("cds collect follows a workspace's allowed origins within 1 s, without a restart", async () => {
    const created = await cdsJson<{ tenant_token: { token: string } }>(
      'tenants',
      'create',
      'acme',
      '-w',
      'eu',
    );
    const tenantToken = created.tenant_token.token;
    const server = await start(['serve', '--port', '0', '--quiet'], LISTENING);
    await api(server.url, tenantToken, 'PUT', '/v1/tenants/acme/event-types/page_viewed');
    const collector = await start(['collect', '--port', '0'], COLLECTING);
    const shop = 'https://shop.acme.test';
    const beacon = () =>
      fetch(`${collector.url}/v1/events?tenant_id=acme&workspace_id=eu`, {
        method: 'POST',
        headers: { origin: shop, 'content-type': 'text/plain' },
        body: JSON.stringify(event('acme', 'eu', 'page_viewed')),
      });
    const setOrigins = (origins: string[]) =>
      fetch(`${server.url}/v1/tenants/acme/workspaces/eu`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tenantToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ allowed_origins: origins }),
      });

    expect((await beacon()).status).toBe(403);
    expect((await setOrigins(['https://*.acme.test'])).status).toBe(200);
    await waitUntil(
      async () => (await beacon()).status === 202,
      'cds collect to allow the origin',
      1_000,
    );
    expect((await setOrigins([])).status).toBe(200);
    await waitUntil(
      async () => (await beacon()).status === 403,
      'cds collect to refuse the origin',
      1_000,
    );
    expect(logProblems(collector.errors())).toEqual([]);
  });

  it('a tenant named constructor with a collector token: cds serve starts and restarts, every tenant writes', async () => {
    const odd = await cdsJson<{ tenant_token: { token: string } }>(
      'tenants',
      'create',
      'constructor',
      '-w',
      'constructor',
    );
    const oddToken = await issueCollectorToken('constructor');
    const acme = await cdsJson<{ tenant_token: { token: string } }>(
      'tenants',
      'create',
      'acme',
      '-w',
      'eu',
    );
    expect((await cds('tokens', 'list', '-t', 'constructor')).code).toBe(0);
    for (let start_ = 0; start_ < 2; start_ += 1) {
      const server = await start(['serve', '--port', '0', '--quiet'], LISTENING);
      for (const [tenant, token, workspace] of [
        ['acme', acme.tenant_token.token, 'eu'],
        ['constructor', odd.tenant_token.token, 'constructor'],
      ] as const) {
        const written = await api(
          server.url,
          token,
          'PUT',
          `/v1/tenants/${tenant}/event-types/page_viewed`,
        );
        expect(written.status, await written.text()).toBeLessThan(300);
        const browser = await fetch(`${server.url}/v1/events`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'x-tenant-id': tenant,
            'x-workspace-id': workspace,
          },
          body: JSON.stringify(event(tenant, workspace, 'page_viewed')),
        });
        expect(browser.status).toBe(202);
      }
      expect(
        (await sendServerEvent(server.url, oddToken.token, 'constructor', 'constructor')).status,
      ).toBe(202);
      expect(await server.stop()).toBe(0);
      children = [];
    }
    const collector = await start(['collect', '--port', '0'], COLLECTING);
    expect(
      (await sendServerEvent(collector.url, oddToken.token, 'constructor', 'constructor')).status,
    ).toBe(202);
  });
});
