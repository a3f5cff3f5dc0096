import { randomBytes, randomUUID } from 'node:crypto';
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { listSealedFiles } from '../../src/ingest/landing-files.js';
import {
  listQuarantine,
  type QuarantinedFile,
  quarantineDir,
  retryQuarantined,
} from '../../src/quarantine/quarantine.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import { cdsInProcess, cdsJsonInProcess } from '../helpers/cli-in-process.js';
import { openTestEnv, type TestEnv, tempDir } from '../helpers/context.js';
import { envelope, registerEventTypes } from '../helpers/events.js';
import { operatorReadiness } from '../helpers/readiness.js';
import { call, seedTenants, type Tokens } from '../helpers/tenant.js';

type Line = { source: 'browser' | 'server'; event: Record<string, unknown> } | string;

let sequence = 0;
const SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/**
 * Lines as a collector leaves them in a sealed file of the partition, in the order given; a
 * string is written as it is, for lines no collector of ours would write.
 */
function land(
  landingDir: string,
  tenant: string,
  workspace: string,
  lines: Line[],
  unterminatedTail = '',
): string {
  const partition = join(
    landingDir,
    `tenant=${tenant}`,
    `workspace=${workspace}`,
    'date=2026-03-01',
    'hour=11',
  );
  mkdirSync(partition, { recursive: true });
  sequence += 1;
  const path = join(partition, `ctest-${String(sequence).padStart(8, '0')}.ndjson`);
  const text = lines
    .map((line) =>
      typeof line === 'string'
        ? line
        : JSON.stringify({
            received_at: '2026-03-01T11:00:00.000Z',
            source: line.source,
            collector_id: 'ctest',
            event: line.event,
          }),
    )
    .join('\n');
  writeFileSync(`${path}.open`, `${text}\n${unterminatedTail}`);
  renameSync(`${path}.open`, path);
  return path;
}

const serverEvent = (tenant: string, email: string, properties: Record<string, unknown> = {}) => ({
  source: 'server' as const,
  event: envelope({ tenant, identifiers: { email }, properties }),
});

async function profileOf(env: TestEnv, token: string, tenant: string, email: string) {
  const lookup = await call(
    env.app,
    token,
    'GET',
    `/v1/tenants/${tenant}/workspaces/eu/profiles/lookup?email=${encodeURIComponent(email)}`,
  );
  return lookup.statusCode === 200 ? (lookup.json() as { profile_id: string }).profile_id : null;
}

async function ingested(env: TestEnv): Promise<number> {
  return (await operatorReadiness(env)).events_ingested;
}

/** Properties nested `depth` levels deep, written as text: no JSON.stringify recursion. */
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

describe('one tenant’s poison in a shared backlog', () => {
  let env: TestEnv;
  let tokens: Tokens;
  beforeEach(async () => {
    env = await openTestEnv({
      config: { webhook_url: 'http://127.0.0.1:9/hooks', webhook_secret: SECRET },
    });
    tokens = await seedTenants(env.context);
    await registerEventTypes(env, tokens.tenant, 'acme');
    await registerEventTypes(env, tokens.otherTenant, 'globex');
    const metric = await call(
      env.app,
      tokens.otherTenant,
      'PUT',
      '/v1/tenants/globex/metric-definitions',
      {
        metric_name: 'views',
        event_name: 'page_viewed',
        value_kind: 'count',
      },
    );
    expect(metric.statusCode, metric.body).toBe(201);
    const segment = await call(
      env.app,
      tokens.otherTenant,
      'PUT',
      '/v1/tenants/globex/segments/viewers',
      {
        workspace_id: 'eu',
        display_name: 'viewers',
        predicate: { metric: 'views', op: 'gte', value: 1 },
      },
    );
    expect(segment.statusCode, segment.body).toBe(201);
  });
  afterEach(() => env.close());

  /**
   * Tenant acme's file holds good lines around the poison; tenant globex's file sits in the same
   * batch. After one drain, globex's customers and acme's good lines are in, and the poison is
   * quarantined (or, where its cause is fixed at the root, simply taken or refused with a reason):
   * in no case does it stop the batch for anyone.
   */
  async function ingestBeside(poison: Line, unterminatedTail = '') {
    land(
      env.context.dataDir.landingDir,
      'acme',
      'eu',
      [serverEvent('acme', 'before@acme.test'), poison, serverEvent('acme', 'after@acme.test')],
      unterminatedTail,
    );
    land(env.context.dataDir.landingDir, 'globex', 'eu', [
      serverEvent('globex', 'ada@globex.test'),
    ]);
    await env.ingest();
    const ada = await profileOf(env, tokens.otherTenant, 'globex', 'ada@globex.test');
    const view = await call(
      env.app,
      tokens.otherTenant,
      'GET',
      `/v1/tenants/globex/workspaces/eu/profiles/${ada}`,
    );
    expect(view.json()).toMatchObject({
      metrics: { views: 1 },
      segments: [{ segment_id: 'viewers' }],
    });
    const outbox = await call(
      env.app,
      operatorToken(env.context.dataDir.masterKey),
      'GET',
      '/v1/operator/webhooks',
    );
    expect(outbox.json()).toMatchObject({
      webhooks: [{ type: 'segment.entered', segment_id: 'viewers', profile_id: ada }],
    });
    expect(await profileOf(env, tokens.tenant, 'acme', 'before@acme.test')).not.toBeNull();
    expect(await profileOf(env, tokens.tenant, 'acme', 'after@acme.test')).not.toBeNull();
    return listQuarantine(env.context.dataDir);
  }

  it('quarantines a line DuckDB cannot read (a 16 MiB run without a newline), with its reason', async () => {
    const tail = `{"received_at":"2026-03-01T11:00:00.000Z","source":"server","event":{"pad":"${'x'.repeat(17 * 1024 * 1024)}"}}`;
    const quarantined = await ingestBeside(serverEvent('acme', 'middle@acme.test'), tail);
    expect(quarantined).toEqual([
      expect.objectContaining({
        tenant_id: 'acme',
        workspace_id: 'eu',
        lines: 1,
        reason: expect.stringMatching(/\S/),
      }),
    ]);
    expect(await ingested(env)).toBe(4);
    const [record] = quarantined;
    const kept = readFileSync(
      join(quarantineDir(env.context.dataDir), `${record?.quarantine_id}.ndjson`),
      'utf8',
    );
    expect(kept).toBe(tail);
  });

  it('finds a failing file among several of one partition by halves, and takes every other line', async () => {
    const tail = `{"received_at":"2026-03-01T11:00:00.000Z","source":"server","event":{"pad":"${'x'.repeat(17 * 1024 * 1024)}"}}`;
    const emails = [1, 2, 3, 4, 5].map((n) => `file${n}@acme.test`);
    for (const [index, email] of emails.entries())
      land(
        env.context.dataDir.landingDir,
        'acme',
        'eu',
        [serverEvent('acme', email)],
        index === 3 ? tail : '',
      );
    await env.ingest();
    expect(await listQuarantine(env.context.dataDir)).toEqual([
      expect.objectContaining({ tenant_id: 'acme', workspace_id: 'eu', lines: 1 }),
    ]);
    expect(await ingested(env)).toBe(5);
    for (const email of emails)
      expect(await profileOf(env, tokens.tenant, 'acme', email), email).not.toBeNull();
    expect(await listSealedFiles(env.context.dataDir.landingDir)).toEqual([]);
  });

  it('gets past lines of bytes that are not text (invalid UTF-8, NUL, a lone surrogate)', async () => {
    const path = land(env.context.dataDir.landingDir, 'acme', 'eu', [
      serverEvent('acme', 'before@acme.test'),
    ]);
    appendFileSync(
      path,
      Buffer.from([0xff, 0xfe, 0x00, 0x7b, 0x22, 0xc3, 0x28, 0x0a, 0xed, 0xa0, 0x80, 0x0a]),
    );
    appendFileSync(
      path,
      `${JSON.stringify({ received_at: '2026-03-01T11:00:00.000Z', source: 'server', collector_id: 'ctest', event: envelope({ tenant: 'acme', identifiers: { email: 'after@acme.test' } }) })}\n`,
    );
    land(env.context.dataDir.landingDir, 'globex', 'eu', [
      serverEvent('globex', 'ada@globex.test'),
    ]);
    await env.ingest();
    expect(await profileOf(env, tokens.otherTenant, 'globex', 'ada@globex.test')).not.toBeNull();
    expect(await profileOf(env, tokens.tenant, 'acme', 'before@acme.test')).not.toBeNull();
    expect(await profileOf(env, tokens.tenant, 'acme', 'after@acme.test')).not.toBeNull();
    expect((await listQuarantine(env.context.dataDir)).length).toBeLessThanOrEqual(2);
  });

  it('takes identifier keys that look like JSON paths as data', async () => {
    const quarantined = await ingestBeside({
      source: 'server',
      event: envelope({
        tenant: 'acme',
        identifiers: { $x: 'a', 'a.b': 'b', '"q"': 'c', '[0]': 'd', email: 'paths@acme.test' },
      }),
    });
    if (quarantined.length === 0) {
      expect(await profileOf(env, tokens.tenant, 'acme', 'paths@acme.test')).not.toBeNull();
    } else {
      expect(quarantined).toEqual([expect.objectContaining({ tenant_id: 'acme', lines: 1 })]);
    }
  });

  it('survives properties nested thousands of levels deep', async () => {
    const line = JSON.stringify({
      received_at: '2026-03-01T11:00:00.000Z',
      source: 'server',
      collector_id: 'ctest',
      event: envelope({ tenant: 'acme', identifiers: { email: 'deep@acme.test' } }),
    }).replace('"properties":{', `"properties":{"deep":${nested(5000)},`);
    const quarantined = await ingestBeside(line);
    expect(quarantined.length).toBeLessThanOrEqual(1);
    expect(await ingested(env)).toBeGreaterThanOrEqual(3);
  });

  it('keeps no plain email in the reason, lists it for the operator and puts it back on retry', async () => {
    const tail = `{"email":"leak@acme.test","pad":"${'y'.repeat(17 * 1024 * 1024)}"}`;
    await ingestBeside(serverEvent('acme', 'middle@acme.test'), tail);
    const operator = operatorToken(env.context.dataDir.masterKey);
    const listing = await call(env.app, operator, 'GET', '/v1/operator/quarantine');
    expect(listing.statusCode).toBe(200);
    const { quarantined, next_cursor } = listing.json() as {
      quarantined: QuarantinedFile[];
      next_cursor: string | null;
    };
    expect(next_cursor).toBeNull();
    expect(quarantined).toHaveLength(1);
    const [record] = quarantined as [QuarantinedFile];
    expect(listing.body).not.toContain('leak@acme.test');
    expect(record.landing_path).toMatch(/^tenant=acme\/workspace=eu\//);
    expect(await operatorReadiness(env)).toMatchObject({
      quarantined_files: 1,
      quarantined_lines: 1,
    });
    expect((await call(env.app, tokens.tenant, 'GET', '/v1/operator/quarantine')).statusCode).toBe(
      403,
    );

    const retry = await call(env.app, operator, 'POST', '/v1/operator/quarantine/retry', {
      quarantine_id: record.quarantine_id,
    });
    expect(retry.json()).toEqual({ requeued: [record.quarantine_id] });
    expect(await listQuarantine(env.context.dataDir)).toEqual([]);
    expect(existsSync(join(env.context.dataDir.landingDir, record.landing_path))).toBe(true);
    await env.ingest();
    expect(await listQuarantine(env.context.dataDir)).toEqual([
      expect.objectContaining({ landing_path: record.landing_path, lines: 1 }),
    ]);
    const unknown = await call(env.app, operator, 'POST', '/v1/operator/quarantine/retry', {
      quarantine_id: 'q_unknown',
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json()).toMatchObject({ error: { code: 'not_found' } });
  });

  it('removes a quarantined line that carries an erased customer’s identifier', async () => {
    const pad = 'p'.repeat(17 * 1024 * 1024);
    const poison = (email: string) =>
      JSON.stringify({
        received_at: '2026-03-01T11:00:00.000Z',
        source: 'server',
        collector_id: 'ctest',
        event: envelope({ tenant: 'acme', identifiers: { email }, properties: { pad } }),
      });
    await ingestBeside(serverEvent('acme', 'ada@acme.test'), poison(' Ada@Acme.test'));
    land(env.context.dataDir.landingDir, 'acme', 'eu', [], poison('bob@acme.test'));
    await env.ingest();
    expect(await listQuarantine(env.context.dataDir)).toHaveLength(2);

    const ada = await profileOf(env, tokens.tenant, 'acme', 'ada@acme.test');
    const erased = await call(
      env.app,
      tokens.tenant,
      'DELETE',
      `/v1/tenants/acme/workspaces/eu/profiles/${ada}`,
    );
    expect(erased.statusCode).toBe(200);
    const left = await listQuarantine(env.context.dataDir);
    expect(left).toHaveLength(1);
    const folder = quarantineDir(env.context.dataDir);
    const kept = readdirSync(folder).map((name) => readFileSync(join(folder, name), 'utf8'));
    expect(kept.some((text) => text.includes('bob@acme.test'))).toBe(true);
    expect(kept.some((text) => text.toLowerCase().includes('ada@acme.test'))).toBe(false);
  });

  it('refuses a retry of an id it does not hold', async () => {
    await expect(retryQuarantined(env.context.dataDir, `q_${randomUUID()}`)).rejects.toThrow(
      /no quarantined file/,
    );
  });
});

describe('cds ingest quarantine', () => {
  it('lists what a pass set aside, counts it in --status, and puts it back on retry', async () => {
    const dir = tempDir();
    try {
      expect(
        (await cdsInProcess(['--data-dir', dir, 'tenants', 'create', 'acme', '-w', 'eu'])).code,
      ).toBe(0);
      const tail = `{"pad":"${'z'.repeat(17 * 1024 * 1024)}"}`;
      land(join(dir, 'landing'), 'acme', 'eu', [serverEvent('acme', 'a@acme.test')], tail);

      const pass = await cdsInProcess(['--data-dir', dir, 'ingest']);
      expect(pass.code).toBe(0);
      expect(pass.stderr).toMatch(/ingest quarantined 1 line\(s\) of tenant acme/);
      const listed = await cdsJsonInProcess<{ quarantined: QuarantinedFile[] }>([
        '--data-dir',
        dir,
        'ingest',
        'quarantine',
        'list',
      ]);
      expect(listed.quarantined).toEqual([
        expect.objectContaining({ tenant_id: 'acme', workspace_id: 'eu', lines: 1 }),
      ]);
      const table = await cdsInProcess(['--data-dir', dir, 'ingest', 'quarantine', 'list']);
      expect(table.stdout).toContain(listed.quarantined[0]?.quarantine_id);
      expect(table.stdout).not.toContain('next page');

      land(join(dir, 'landing'), 'acme', 'eu', [serverEvent('acme', 'b@acme.test')], tail);
      expect((await cdsInProcess(['--data-dir', dir, 'ingest'])).code).toBe(0);
      const first = await cdsInProcess([
        ...['--data-dir', dir, 'ingest', 'quarantine', 'list', '--limit', '1'],
      ]);
      const cursor = /next page: --cursor (\S+)/.exec(first.stdout)?.[1];
      expect(cursor).toBeDefined();
      const second = await cdsJsonInProcess<{
        quarantined: QuarantinedFile[];
        next_cursor: string | null;
      }>([
        '--data-dir',
        dir,
        'ingest',
        'quarantine',
        'list',
        '--limit',
        '1',
        '--cursor',
        `${cursor}`,
      ]);
      expect(second.next_cursor).toBeNull();
      expect(second.quarantined).toHaveLength(1);
      expect(first.stdout).not.toContain(second.quarantined[0]?.quarantine_id);
      const status = await cdsJsonInProcess<{ quarantined_files: number }>([
        '--data-dir',
        dir,
        'ingest',
        '--status',
      ]);
      expect(status.quarantined_files).toBe(2);

      const retry = await cdsInProcess(['--data-dir', dir, 'ingest', 'quarantine', 'retry']);
      expect(retry.stdout).toMatch(/^2 quarantined file\(s\) put back/);
      const after = await cdsJsonInProcess<{ quarantined: QuarantinedFile[] }>([
        '--data-dir',
        dir,
        'ingest',
        'quarantine',
        'list',
      ]);
      expect(after.quarantined).toEqual([]);
      const missing = await cdsInProcess([
        '--data-dir',
        dir,
        'ingest',
        'quarantine',
        'retry',
        'q_gone',
      ]);
      expect(missing).toMatchObject({ code: 1, stderr: 'cds: no quarantined file q_gone\n' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
