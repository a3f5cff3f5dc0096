import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cdsInProcess } from '../helpers/cli-in-process.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope, sendServer } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

let env: TestEnv;
let tokens: Tokens;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv({ collector: true }));
});
afterEach(() => env.close());

const rejections = (token: string, query: string) =>
  call(env.app, token, 'GET', `/v1/tenants/acme/rejections${query}`);

/**
 * Events the collector takes and ingest refuses: some name only an identifier type the tenant
 * never declared (`no_identifiers`), one an event type deleted before ingest.
 */
async function refusedAtIngest(): Promise<string[]> {
  const unidentified = [1, 2, 3, 4].map((n) =>
    envelope({ identifiers: { loyalty_id: `L-secret-${n}` } }),
  );
  const untyped = envelope({ name: 'signed_up', identifiers: { email: 'ana@example.com' } });
  const elsewhere = envelope({ workspace: 'us', identifiers: { loyalty_id: 'L-us' } });
  const sent = await sendServer(env, tokens.collector, [...unidentified, untyped, elsewhere]);
  expect(sent.json()).toMatchObject({ accepted: 6, rejected: [] });
  await call(env.app, tokens.tenant, 'DELETE', '/v1/tenants/acme/event-types/signed_up');
  await env.ingest();
  return [...unidentified, untyped].map((event) => String(event.id));
}

describe('GET /v1/tenants/{t}/rejections', () => {
  it('lists what ingest refused in the workspace, with the reason, never what the event held', async () => {
    const ids = await refusedAtIngest();
    const response = await rejections(tokens.tenant, '?workspace_id=eu');
    expect(response.statusCode).toBe(200);
    const body = response.json();
    expect(body.next_cursor).toBeNull();
    expect(body.rejections.map((row: { event_id: string }) => row.event_id).sort()).toEqual(
      [...ids].sort(),
    );
    const untyped = body.rejections.find((row: { event_id: string }) => row.event_id === ids[4]);
    expect(untyped).toEqual({
      event_id: ids[4],
      event_name: 'signed_up',
      workspace_id: 'eu',
      reason: 'unknown_event_type',
      received_at: expect.any(String),
      rejected_at: expect.any(String),
    });
    expect(
      body.rejections.filter((row: { reason: string }) => row.reason === 'no_identifiers'),
    ).toHaveLength(4);
    expect(response.body).not.toMatch(/L-secret|ana@example\.com|landing/);
  });

  it('pages newest first through every rejection once', async () => {
    const ids = await refusedAtIngest();
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const query: string = `?workspace_id=eu&limit=2${cursor ? `&cursor=${cursor}` : ''}`;
      const page = (await rejections(tokens.tenant, query)).json();
      seen.push(...page.rejections.map((row: { event_id: string }) => row.event_id));
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor !== null);
    expect(pages).toBe(3);
    expect(seen.sort()).toEqual([...ids].sort());
    const forged = Buffer.from('{"a":"not a time","f":"x","i":"y","r":"z"}').toString('base64url');
    expect((await rejections(tokens.tenant, `?workspace_id=eu&cursor=${forged}`)).statusCode).toBe(
      422,
    );
  });

  it('shows a workspace token its own workspace only, and no token another tenant', async () => {
    await refusedAtIngest();
    const own = await rejections(tokens.workspace, '');
    expect(own.statusCode).toBe(200);
    expect(own.json().rejections).toHaveLength(5);
    expect((await rejections(tokens.workspace, '?workspace_id=us')).statusCode).toBe(403);
    expect((await rejections(tokens.otherWorkspace, '')).json().rejections).toHaveLength(1);
    expect((await rejections(tokens.otherTenant, '?workspace_id=eu')).statusCode).toBe(403);
    expect((await rejections(tokens.tenant, '')).statusCode).toBe(422);
  });

  it('cds ingest rejections prints every one, through --server', async () => {
    const ids = await refusedAtIngest();
    const url = await env.app.listen({ port: 0, host: '127.0.0.1' });
    const listed = await cdsInProcess([
      '--server',
      url,
      '--token',
      tokens.tenant,
      '--json',
      'ingest',
      'rejections',
      '-t',
      'acme',
      '-w',
      'eu',
    ]);
    expect(listed.code, listed.stderr).toBe(0);
    const printed = JSON.parse(listed.stdout) as { rejections: { event_id: string }[] };
    expect(printed.rejections.map((row) => row.event_id).sort()).toEqual([...ids].sort());
    const table = await cdsInProcess([
      '--server',
      url,
      '--token',
      tokens.tenant,
      'ingest',
      'rejections',
      '-t',
      'acme',
      '-w',
      'eu',
    ]);
    expect(table.code).toBe(0);
    expect(table.stdout).toContain('no_identifiers');
    expect(table.stdout).toContain('unknown_event_type');
  });
});
