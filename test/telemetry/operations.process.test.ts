import { createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDataDir } from '../../src/store/data-dir.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import { type ChildServer, startCli } from '../helpers/cli.js';
import { logRecords } from '../helpers/log.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

/** A port nothing listens on: bound, then closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as { port: number };
  await new Promise((done) => server.close(done));
  return port;
}

/** The sum of a series' samples in Prometheus' text format; `absent` when it has none. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
  absent?: number,
): number {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  let total = 0;
  let found = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const given = match[2] ?? '';
    if (!wanted.every((label) => given.split(',').includes(label))) continue;
    total += Number(match[3]);
    found = true;
  }
  if (!found) {
    if (absent !== undefined) return absent;
    throw new Error(`no sample of ${name} ${JSON.stringify(labels)}`);
  }
  return total;
}

describe('operating cds: one log and the metrics endpoint over a full run', () => {
  let dir: string;
  let demoDir: string;
  let demo: ChildServer;
  let tokens: { tenant: string; workspace: string; collector: string; operator: string };
  const log: string[] = [];

  beforeAll(async () => {
    dir = tempDir();
    demoDir = join(dir, 'demo');
    // The demo sends and ingests 5,000 events first: about 20 s on a quiet machine, and three
    // times that with two other process files beside it.
    demo = await startCli(['--data-dir', demoDir, 'demo', '--port', '0'], /Press Ctrl-C/, 120_000, {
      CDS_LOG_LEVEL: 'debug',
    });
    const text = demo.output();
    const token = (label: string) => new RegExp(`${label} token\\s+(cp[a-z]_\\S+)`).exec(text)?.[1];
    demo.url = /curl -s (http:\/\/[^/\s]+)\/v1\/whoami/.exec(text)?.[1] ?? '';
    tokens = {
      tenant: token('tenant') ?? '',
      workspace: token('workspace') ?? '',
      collector: token('collector') ?? '',
      operator: operatorToken(openDataDir(demoDir).masterKey),
    };
  }, 150_000);
  afterAll(async () => {
    await demo?.stop();
  });

  const scrape = async (token = tokens.operator) =>
    fetch(`${demo.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });

  const sendEvents = (url: string, count: number, email: (index: number) => string) =>
    fetch(`${url}/v1/server/events/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tokens.collector}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        events: Array.from({ length: count }, (_, index) => ({
          envelop_version: '1.0',
          id: crypto.randomUUID(),
          name: 'page_viewed',
          tenant_id: 'demo',
          workspace_id: 'brand-eu',
          occured_at: new Date().toISOString(),
          properties: { identifiers: { email: email(index) }, path: '/' },
        })),
      }),
    });

  it('answers /metrics to the operator token only', async () => {
    const anonymous = await fetch(`${demo.url}/metrics`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { code: 'unauthorized' } });
    expect((await scrape(tokens.tenant)).status).toBe(401);
    const answer = await scrape();
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  });

  it('shows the series of every part after the demo load, and they move with new events', async () => {
    const before = await (await scrape()).text();
    const present = [
      ['cds_collector_events_total', { outcome: 'accepted' }],
      ['cds_landing_backlog_files', {}],
      ['cds_landing_backlog_bytes', {}],
      ['cds_landing_backlog_oldest_age_seconds', {}],
      ['cds_ingest_batches_total', { outcome: 'committed' }],
      ['cds_ingest_events_total', { outcome: 'stored' }],
      ['cds_ingest_batch_duration_seconds_count', {}],
      ['cds_ingest_lag_seconds', {}],
      ['cds_quarantine_files', {}],
      ['cds_segment_evaluations_total', {}],
      ['cds_webhook_outbox', { status: 'pending' }],
      ['cds_webhook_outbox', { status: 'failed' }],
      ['cds_webhook_attempts_total', { outcome: 'delivered' }],
      ['cds_webhook_delivery_latency_seconds_count', {}],
      ['cds_erasures_awaiting_purge', {}],
      ['cds_http_request_duration_seconds_count', { route: '/v1/server/events/batch' }],
    ] as const;
    for (const [name, labels] of present) expect(() => sample(before, name, labels)).not.toThrow();
    expect(sample(before, 'cds_collector_events_total', { outcome: 'accepted' })).toBeGreaterThan(
      4000,
    );
    expect(sample(before, 'cds_webhook_attempts_total', { outcome: 'delivered' })).toBeGreaterThan(
      0,
    );

    const sent = await sendEvents(demo.url, 20, (index) => `metrics-${index}@shop.example`);
    expect(sent.status).toBe(202);
    const refused = await fetch(`${demo.url}/v1/server/events`, {
      method: 'POST',
      headers: { authorization: 'Bearer cpc_unknown', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(refused.status).toBe(401);
    let after = '';
    await waitUntil(
      async () => {
        after = await (await scrape()).text();
        return (
          sample(after, 'cds_ingest_events_total', { outcome: 'stored' }) >=
          sample(before, 'cds_ingest_events_total', { outcome: 'stored' }) + 20
        );
      },
      'the 20 events ingested, as /metrics counts them',
      15_000,
    );
    const moved = (name: string, labels: Record<string, string> = {}) =>
      sample(after, name, labels) - sample(before, name, labels, 0);
    expect(moved('cds_collector_events_total', { outcome: 'accepted' })).toBe(20);
    expect(moved('cds_collector_requests_refused_total', { reason: 'unauthorized' })).toBe(1);
    expect(moved('cds_ingest_batches_total', { outcome: 'committed' })).toBeGreaterThan(0);
    expect(moved('cds_ingest_batch_duration_seconds_count')).toBeGreaterThan(0);
    expect(moved('cds_segment_evaluations_total')).toBeGreaterThan(0);
    expect(
      moved('cds_http_request_duration_seconds_count', {
        route: '/v1/server/events/batch',
        status: '202',
      }),
    ).toBe(1);
  });

  it('logs one JSON record a line from every component, and never a token, email or phone', async () => {
    const summary = await fetch(
      `${demo.url}/v1/tenants/demo/workspaces/brand-eu/profiles/summary?limit=500`,
      { headers: { authorization: `Bearer ${tokens.tenant}` } },
    );
    const { profiles } = (await summary.json()) as {
      profiles: { profile_id: string; email: string | null; phone?: string | null }[];
    };
    const erased = profiles.find((profile) => profile.email !== null);
    if (!erased?.email) throw new Error('the demo made no profile with an email');
    expect(await demo.stop()).toBe(0);
    log.push(demo.errors());

    // The same data dir served again, with its request log, its webhooks sent where nothing
    // listens: a segment with backfill announcements queues webhooks that fail, a profile is
    // looked up by email (in the query string) and erased, and the erasure purged.
    const server = await startCli(
      ['--data-dir', demoDir, 'serve', '--port', '0'],
      /cds listening on (http:\/\/\S+)/,
      20_000,
      {
        CDS_LOG_LEVEL: 'debug',
        CDS_WEBHOOK_URL: `http://127.0.0.1:${await closedPort()}/hooks`,
        CDS_WEBHOOK_SECRET: 'whsec_bG9nLXRlc3Qtc2VjcmV0LW5vdC1yZWFs',
        CDS_WEBHOOK_RETRY_BASE_MS: '100',
      },
    );
    try {
      const created = await fetch(`${server.url}/v1/tenants/demo/segments/logged-buyers`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${tokens.tenant}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          workspace_id: 'brand-eu',
          display_name: 'Buyers',
          predicate: { metric: 'orders', op: 'gte', value: 1 },
          automations: { on_enter: true, on_exit: true, on_backfill: true },
        }),
      });
      expect(created.status, await created.text()).toBeLessThan(300);
      expect((await sendEvents(server.url, 5, (index) => `log-${index}@shop.example`)).status).toBe(
        202,
      );
      const lookup = await fetch(
        `${server.url}/v1/tenants/demo/workspaces/brand-eu/profiles/lookup?email=${encodeURIComponent(erased.email)}`,
        { headers: { authorization: `Bearer ${tokens.tenant}` } },
      );
      expect(lookup.status).toBe(200);
      const erasure = await fetch(
        `${server.url}/v1/tenants/demo/workspaces/brand-eu/profiles/${erased.profile_id}`,
        { method: 'DELETE', headers: { authorization: `Bearer ${tokens.tenant}` } },
      );
      expect(erasure.status).toBe(200);
      await waitUntil(
        () => {
          const text = server.errors();
          return text.includes('purge done') && text.includes('webhook delivery failed');
        },
        'the purge and a failed webhook delivery in the log',
        30_000,
      );
    } finally {
      expect(await server.stop()).toBe(0);
    }
    log.push(server.errors());

    const all = log.flatMap(logRecords);
    const said = (component: string, message: string) =>
      all.filter((record) => record.component === component && record.msg.includes(message));
    expect(said('ingest', 'ingest batch committed').length).toBeGreaterThan(0);
    expect(said('ingest', 'ingest batch committed')[0]).toMatchObject({
      stored: expect.any(Number),
      duration_ms: expect.any(Number),
    });
    expect(said('erasure', 'purge done')).toHaveLength(1);
    const failedDelivery = said('webhooks', 'webhook delivery failed')[0];
    expect(failedDelivery?.cause).toMatch(/refused|ECONNREFUSED|fetch failed/i);
    expect(failedDelivery?.level).toBe(40);
    expect(said('process', 'cds listening on http://')).toHaveLength(1);
    expect(said('process', 'shutting down')).toHaveLength(2);
    expect(said('process', 'stopped')).toHaveLength(2);
    expect(all.some((record) => record.component === 'http')).toBe(true);

    const text = log.join('');
    const secrets = [
      tokens.tenant,
      tokens.workspace,
      tokens.collector,
      tokens.operator,
      'whsec_bG9nLXRlc3Qtc2VjcmV0LW5vdC1yZWFs',
    ];
    for (const secret of secrets) expect(text).not.toContain(secret);
    const identifiers = profiles.flatMap((profile) => [profile.email, profile.phone]);
    const plain = identifiers.filter((value): value is string => Boolean(value));
    expect(plain.length).toBeGreaterThan(50);
    for (const value of [...plain, 'metrics-0@shop.example', 'log-0@shop.example']) {
      expect(text).not.toContain(value);
      expect(text).not.toContain(encodeURIComponent(value));
    }
  }, 90_000);
});
