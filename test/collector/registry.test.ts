import { readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readRegistryFile } from '../../src/collector/registry.js';
import { RegistryPublisher, VERSIONS_PER_EPOCH } from '../../src/collector/registry-publisher.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

const ROUNDS = 30;

describe('registry.json publishing', () => {
  let env: TestEnv;
  let tokens: Tokens;

  beforeEach(async () => {
    ({ env, tokens } = await openSeededEnv({ collector: true }));
  });
  afterEach(() => env.close());

  const registryPath = () => env.context.dataDir.registryPath;
  const tenantCall = (method: 'PUT' | 'POST' | 'DELETE', url: string, body?: unknown) =>
    call(env.app, tokens.tenant, method, `/v1/tenants/acme${url}`, body);
  const browserEvent = (workspace: string) =>
    env.app.inject({
      method: 'POST',
      url: '/v1/events',
      headers: { 'x-tenant-id': 'acme', 'x-workspace-id': workspace },
      payload: envelope({ anon: 'r', workspace }),
    });

  it('under concurrent writes and revocations, every answer holds at once and the file only moves forward', async () => {
    let racing = true;
    const versions: number[] = [];
    const fileFaults: string[] = [];
    // Reads the file back to back all through the race: it always parses, its version never drops.
    const watcher = (async () => {
      while (racing) {
        const text = await readFile(registryPath(), 'utf8');
        try {
          versions.push((JSON.parse(text) as { version: number }).version);
        } catch (error) {
          fileFaults.push(`${(error as Error).message}: ${text.slice(0, 80)}`);
        }
      }
    })();

    const revoked: string[] = [];
    const lateAcceptances: string[] = [];
    // Tokens whose revocation has answered are tried again and again while the race goes on.
    const prober = (async () => {
      while (racing) {
        for (const token of [...revoked]) {
          const response = await sendServer(env, token, [envelope({ anon: 'late' })]);
          if (response.statusCode !== 401) lateAcceptances.push(`${response.statusCode}`);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();

    const outcomes: string[] = [];
    const workspaceRound = async (round: number) => {
      const workspace = `race${round}`;
      const created = await tenantCall('PUT', `/workspaces/${workspace}`, {});
      outcomes.push(`workspace ${created.statusCode}`);
      const sent = await browserEvent(workspace);
      if (sent.statusCode !== 202) outcomes.push(`event in new workspace ${sent.statusCode}`);
    };
    const tokenRound = async (round: number) => {
      const issued = await tenantCall('POST', '/tokens', { kind: 'collector', name: `r${round}` });
      const { token, token_id: tokenId } = issued.json() as { token: string; token_id: string };
      const accepted = await sendServer(env, token, [envelope({ anon: `t${round}` })]);
      if (accepted.statusCode !== 202) outcomes.push(`new token ${accepted.statusCode}`);
      const revocation = await tenantCall('DELETE', `/tokens/${tokenId}`);
      outcomes.push(`revoke ${revocation.statusCode}`);
      revoked.push(token);
      const refused = await sendServer(env, token, [envelope({ anon: `t${round}` })]);
      if (refused.statusCode !== 401) outcomes.push(`revoked token ${refused.statusCode}`);
    };
    await Promise.all(
      Array.from({ length: ROUNDS }, (_, round) => [
        workspaceRound(round),
        tokenRound(round),
      ]).flat(),
    );
    racing = false;
    await Promise.all([watcher, prober]);

    expect(outcomes.sort()).toEqual(
      [...Array(ROUNDS).fill('revoke 204'), ...Array(ROUNDS).fill('workspace 201')].sort(),
    );
    expect(lateAcceptances).toEqual([]);
    expect(fileFaults).toEqual([]);
    expect(versions.length).toBeGreaterThan(0);
    expect(versions).toEqual([...versions].sort((a, b) => a - b));

    const final = await readRegistryFile(registryPath());
    expect(final.version).toBeGreaterThanOrEqual(Math.max(...versions));
    const acme = final.tenants.find((tenant) => tenant.tenant_id === 'acme');
    expect(acme?.workspaces).toEqual(
      expect.arrayContaining(Array.from({ length: ROUNDS }, (_, round) => `race${round}`)),
    );
    expect(acme?.collector_tokens.map((token) => token.token_id)).toHaveLength(1);
    // One temp file per write, each renamed or removed.
    expect(readdirSync(env.dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
  });

  it('a new owner of the database publishes above the file, even from a database restored from a backup', async () => {
    const before = await readRegistryFile(registryPath());
    // As if the database were a copy from before every epoch the file has seen.
    await env.context.store.write((session) =>
      session.runText('UPDATE registry_epoch SET epoch = 0'),
    );
    const published = await new RegistryPublisher(env.context).publish();
    expect(Math.floor(published.version / VERSIONS_PER_EPOCH)).toBeGreaterThan(
      Math.floor(before.version / VERSIONS_PER_EPOCH),
    );
    expect((await readRegistryFile(registryPath())).version).toBe(published.version);
  });
});
