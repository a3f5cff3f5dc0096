import { afterEach, describe, expect, it } from 'vitest';
import { type ChildServer, runJson, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

const LISTENING = /cds listening on (http:\/\/\S+)/;

describe('sealing for a caught-up ingest loop', () => {
  let server: ChildServer | null = null;
  afterEach(async () => {
    await server?.stop();
    server = null;
  });

  it('ingests events long before their landing file’s age is due while the loop has nothing else to take', async () => {
    const dir = tempDir();
    const created = await runJson<{ tenant_token: { token: string } }>([
      '--data-dir',
      dir,
      'tenants',
      'create',
      'acme',
      '-w',
      'eu',
    ]);
    // Files would be sealed after ten minutes by age alone.
    server = await startCli(
      ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
      LISTENING,
      20_000,
      {
        CDS_LANDING_MAX_AGE_MS: '600000',
        CDS_INGEST_INTERVAL_MS: '200',
      },
    );
    const url = server.url;
    const api = async (method: string, path: string, token: string, body?: unknown) => {
      const response = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return {
        status: response.status,
        body: (await response.json().catch(() => null)) as Record<string, unknown>,
      };
    };
    const tenantToken = created.tenant_token.token;
    expect(
      (await api('PUT', '/v1/tenants/acme/event-types/signed_up', tenantToken, {})).status,
    ).toBe(201);
    const issued = await api('POST', '/v1/tenants/acme/tokens', tenantToken, {
      kind: 'collector',
      name: 'backend',
      workspace_id: 'eu',
    });
    const collectorToken = issued.body.token as string;

    for (const [index, email] of ['ada@acme.test', 'bob@acme.test'].entries()) {
      const sent = await api('POST', '/v1/server/events/batch', collectorToken, {
        events: [
          {
            envelop_version: '1.0',
            id: `e-${index}`,
            name: 'signed_up',
            tenant_id: 'acme',
            workspace_id: 'eu',
            occured_at: '2026-03-01T10:00:00.000Z',
            properties: { identifiers: { email } },
          },
        ],
      });
      expect(sent.status).toBe(202);
      await waitUntil(
        async () =>
          (
            await api(
              'GET',
              `/v1/tenants/acme/workspaces/eu/profiles/lookup?email=${email}`,
              tenantToken,
            )
          ).status === 200,
        `${email}'s profile`,
        10_000,
      );
    }
  });
});
