import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { putEventType } from '../../src/catalog/event-types.js';
import { openContext } from '../../src/cli/open-context.js';
import { Store } from '../../src/store/database.js';
import { createTenant } from '../../src/tenancy/tenants.js';
import { issueToken } from '../../src/tenancy/tokens.js';
import { runCli, startCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/temp-dirs.js';

const ROUNDS = 6;
const SENDERS = 4;

async function setUp(dir: string): Promise<string> {
  // The context the children's `cds serve` opens too, with the same environment.
  const context = await openContext({ data_dir: dir }, 'create');
  await createTenant(context, 'acme', ['eu']);
  await putEventType(context, 'acme', 'page_viewed', null);
  const collector = await issueToken(context, 'acme', {
    kind: 'collector',
    workspaceId: null,
    name: 'load',
  });
  await context.store.close();
  return collector.token;
}

function batch(): { ids: string[]; body: string } {
  const events = Array.from({ length: 25 }, () => ({
    envelop_version: '1.0',
    id: randomUUID(),
    name: 'page_viewed',
    tenant_id: 'acme',
    workspace_id: 'eu',
    occured_at: new Date().toISOString(),
    properties: { identifiers: { email: `shopper${Math.floor(Math.random() * 50)}@crash.test` } },
  }));
  return { ids: events.map((event) => event.id), body: JSON.stringify({ events }) };
}

/** Sends batches until the server goes away; returns the ids of events whose request got a 2xx. */
async function sendUntilGone(
  url: string,
  token: string,
  acknowledged: Set<string>,
  stop: { gone: boolean },
) {
  while (!stop.gone) {
    const { ids, body } = batch();
    try {
      const response = await fetch(`${url}/v1/server/events/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
      });
      if (response.ok) {
        const answer = (await response.json()) as { accepted: number };
        expect(answer.accepted).toBe(ids.length);
        for (const id of ids) acknowledged.add(id);
      }
    } catch {
      // The server was killed under this request: it was never acknowledged.
    }
  }
}

describe('crash safety', () => {
  it('opens a database again after a SIGKILL right after the process created and migrated it', async () => {
    // The migrations' changes of schema must not wait in DuckDB's log: replaying an added column
    // with a default (migration 015) fails inside DuckDB ("GetDefaultDatabase with no default
    // database set"), and the database would not open again.
    const dir = join(tempDir(), 'data');
    const server = await startCli(
      ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
      /cds listening on (http:\/\/\S+)/,
    );
    server.child.kill('SIGKILL');
    await server.stop();
    const again = await runCli(['--data-dir', dir, 'tenants', 'list']);
    expect(again.code, again.stderr).toBe(0);
  });

  it('finds a token written just before a SIGKILL, after the log is replayed and checkpointed', async () => {
    // DuckDB 1.5 replays the log into the table, but an index it has not touched since the replay
    // is checkpointed without the replayed rows: a look-up through it (tokens_by_lookup) then
    // missed the token, while a scan found it.
    const dir = join(tempDir(), 'data');
    const serve = () =>
      startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
        /cds listening on (http:\/\/\S+)/,
      );
    const first = await serve();
    const operator = (await runCli(['--data-dir', dir, 'tokens', 'operator'])).stdout.trim();
    const created = await fetch(`${first.url}/v1/operator/tenants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${operator}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tenant_id: 'kept', workspaces: ['web'] }),
    });
    expect(created.status).toBe(201);
    const { token } = ((await created.json()) as { tenant_token: { token: string } }).tenant_token;
    first.child.kill('SIGKILL');
    await first.stop();
    // Replays the log, writes after it without reading tokens, and checkpoints as it closes.
    const context = await openContext({ data_dir: dir }, 'existing');
    await putEventType(context, 'kept', 'page_viewed', null);
    await context.store.close();
    const again = await serve();
    try {
      const answer = await fetch(`${again.url}/v1/tenants/kept/event-types`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(answer.status).toBe(200);
    } finally {
      await again.stop();
    }
  });

  it('keeps every acknowledged event exactly once across repeated SIGKILLs', async () => {
    const dir = tempDir();
    const token = await setUp(dir);
    const acknowledged = new Set<string>();
    const env = { CDS_INGEST_INTERVAL_MS: '150' };

    for (let round = 0; round < ROUNDS; round += 1) {
      const server = await startCli(
        ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
        /cds listening on (http:\/\/\S+)/,
        20_000,
        env,
      );
      const stop = { gone: false };
      const senders = Array.from({ length: SENDERS }, () =>
        sendUntilGone(server.url, token, acknowledged, stop),
      );
      await new Promise((resolve) => setTimeout(resolve, 300 + Math.random() * 1200));
      server.child.kill('SIGKILL');
      await server.stop();
      stop.gone = true;
      await Promise.all(senders);
    }

    const ingest = await runCli(['--data-dir', dir, 'ingest']);
    expect(ingest.code, ingest.stderr).toBe(0);

    const store = await Store.open(join(dir, 'cds.duckdb'));
    try {
      const rows = await store.read((session) =>
        session.allText<{ event_id: string; n: number }>(
          'SELECT event_id, count(*) AS n FROM events GROUP BY event_id',
        ),
      );
      const stored = new Map(rows.map((row) => [row.event_id, row.n]));
      expect(acknowledged.size).toBeGreaterThan(500);
      const missing = [...acknowledged].filter((id) => !stored.has(id));
      expect(missing).toEqual([]);
      expect(rows.filter((row) => row.n !== 1)).toEqual([]);
    } finally {
      await store.close();
    }
  }, 180_000);
});
