import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { generateEvents } from '../src/demo/generator.js';
import {
  CDS_BIN,
  prepareDataDir,
  rate,
  startChild,
  stopChild,
  TENANT,
  WORKSPACES,
} from './setup.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONNECTIONS = 32;

async function load(options: autocannon.Options): Promise<autocannon.Result> {
  return autocannon({ connections: CONNECTIONS, duration: SECONDS, ...options });
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // utime and stime are fields 14 and 15 of stat; after the command's ")" they are 12 and 13.
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** A load run on a server process, with the CPU time that process spent serving it. */
async function measured(
  pid: number,
  options: autocannon.Options,
): Promise<{ result: autocannon.Result; cpu: number }> {
  const before = cpuSeconds(pid);
  const result = await load(options);
  return { result, cpu: cpuSeconds(pid) - before };
}

function browserEvents(count: number) {
  return [
    ...generateEvents({
      seed: 3,
      tenantId: TENANT,
      workspaceIds: [WORKSPACES[0]],
      events: count * 3,
      visitors: 1000,
      start: new Date('2026-03-01T00:00:00Z'),
    }),
  ]
    .filter((item) => item.source === 'browser')
    .slice(0, count)
    .map((item) => item.event);
}

/** `page_viewed` → `Page Viewed`, as a Segment user names events; the collector maps it back. */
function segmentName(name: string): string {
  return name
    .split('_')
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(' ');
}

/** The same events as `@segment/analytics-node` sends them: a message each, in one batch body. */
function segmentBatch(events: Record<string, unknown>[], writeKey: string): string {
  const batch = events.map((event) => ({
    type: 'track',
    event: segmentName(event.name as string),
    properties: event.properties,
    anonymousId: (event.anon_id as string).slice('cookie:'.length),
    timestamp: event.occured_at,
    context: { library: { name: '@segment/analytics-node', version: '3.1.0' } },
    integrations: {},
    // analytics-node's own form, which is no UUID: the collector derives one from it.
    messageId: `node-next-${Date.parse(event.occured_at as string)}-${randomUUID()}`,
    _metadata: { nodeVersion: process.version, jsRuntime: 'node' },
  }));
  return JSON.stringify({ batch, writeKey, sentAt: new Date().toISOString() });
}

/** The same events as analytics.js batches them for `/v1/b` (its text/plain body). */
function analyticsJsBatch(events: Record<string, unknown>[], writeKey: string): string {
  const batch = events.map((event) => ({
    type: 'track',
    event: segmentName(event.name as string),
    properties: event.properties,
    anonymousId: (event.anon_id as string).slice('cookie:'.length),
    timestamp: event.occured_at,
    context: {
      library: { name: 'analytics.js', version: 'next-1.84.3' },
      page: { path: '/', url: 'https://shop.example/', title: 'Shop' },
      userAgent: 'Mozilla/5.0',
    },
    integrations: {},
    messageId: `ajs-next-${Date.parse(event.occured_at as string)}-${randomUUID()}`,
    writeKey,
    _metadata: { bundled: ['Segment.io'], unbundled: [], bundledIds: [] },
  }));
  return JSON.stringify({ batch, writeKey, sentAt: new Date().toISOString() });
}

/**
 * A write key of the bench's first workspace: a collector token (`collector`, Segment's server
 * libraries) or a browser write key (`write_key`, analytics.js).
 */
async function mintWriteKey(
  url: string,
  tenantToken: string,
  kind: 'collector' | 'write_key' = 'collector',
): Promise<string> {
  const response = await fetch(`${url}/v1/tenants/${TENANT}/tokens`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tenantToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ kind, name: kind, workspace_id: WORKSPACES[0] }),
  });
  if (response.status !== 201) throw new Error(`minting a write key: ${await response.text()}`);
  return ((await response.json()) as { token: string }).token;
}

/**
 * `/v1/batch` against `/v1/server/events/batch` with the same 500 events and the same token,
 * in the order native, Segment, Segment, native, so that drift in disk latency falls on both.
 */
async function benchSegmentBatch(url: string, tenantToken: string): Promise<void> {
  const writeKey = await mintWriteKey(url, tenantToken);
  const events = browserEvents(500);
  const run = (path: string, authorization: string, body: string) =>
    load({
      url: `${url}${path}`,
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body,
      connections: 8,
    });
  const native = () =>
    run('/v1/server/events/batch', `Bearer ${writeKey}`, JSON.stringify({ events }));
  const segment = () =>
    run(
      '/v1/batch',
      `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`,
      segmentBatch(events, writeKey),
    );
  const runs = [await native(), await segment(), await segment(), await native()];
  const [nativeFirst, segmentFirst, segmentSecond, nativeSecond] = runs as [
    autocannon.Result,
    autocannon.Result,
    autocannon.Result,
    autocannon.Result,
  ];
  const nativeEvents = (nativeFirst['2xx'] + nativeSecond['2xx']) * 500;
  const segmentEvents = (segmentFirst['2xx'] + segmentSecond['2xx']) * 500;
  const p99 = (a: autocannon.Result, b: autocannon.Result) =>
    Math.max(a.latency.p99, b.latency.p99);
  console.log(
    `native server batch (500 events a request): ${rate(nativeEvents, 2 * SECONDS)} events, p99 ${p99(nativeFirst, nativeSecond)} ms, non-2xx ${nativeFirst.non2xx + nativeSecond.non2xx}`,
  );
  console.log(
    `Segment /v1/batch (the same 500 events as analytics-node sends them): ${rate(segmentEvents, 2 * SECONDS)} events, p99 ${p99(segmentFirst, segmentSecond)} ms, non-2xx ${segmentFirst.non2xx + segmentSecond.non2xx}`,
  );
  console.log(
    `ratio Segment / native batch: ${(segmentEvents / nativeEvents).toFixed(2)} (target >= 0.8)`,
  );
}

/** Events in one analytics.js batch: its settings from cds say 10 (analytics-js/settings.ts). */
const ANALYTICS_JS_BATCH = 10;

/**
 * analytics.js's `/v1/b` against the browser collector's `/v1/events/batch` with the same events,
 * as many a request as the library sends, in the order native, analytics.js, analytics.js,
 * native (issue 39).
 */
async function benchAnalyticsJsBatch(
  url: string,
  tenantToken: string,
  browserHeaders: Record<string, string>,
): Promise<void> {
  const writeKey = await mintWriteKey(url, tenantToken, 'write_key');
  const events = browserEvents(ANALYTICS_JS_BATCH);
  const run = (path: string, headers: Record<string, string>, body: string) =>
    load({ url: `${url}${path}`, method: 'POST', headers, body, connections: 8 });
  const native = () => run('/v1/events/batch', browserHeaders, JSON.stringify({ events }));
  const analyticsJs = () =>
    run(
      '/v1/b',
      {
        authorization: `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}`,
        'content-type': 'text/plain',
      },
      analyticsJsBatch(events, writeKey),
    );
  const [nativeFirst, ajsFirst, ajsSecond, nativeSecond] = [
    await native(),
    await analyticsJs(),
    await analyticsJs(),
    await native(),
  ] as [autocannon.Result, autocannon.Result, autocannon.Result, autocannon.Result];
  const nativeEvents = (nativeFirst['2xx'] + nativeSecond['2xx']) * ANALYTICS_JS_BATCH;
  const ajsEvents = (ajsFirst['2xx'] + ajsSecond['2xx']) * ANALYTICS_JS_BATCH;
  const p99 = (a: autocannon.Result, b: autocannon.Result) =>
    Math.max(a.latency.p99, b.latency.p99);
  console.log(
    `native browser batch (${ANALYTICS_JS_BATCH} events a request): ${rate(nativeEvents, 2 * SECONDS)} events, p99 ${p99(nativeFirst, nativeSecond)} ms, non-2xx ${nativeFirst.non2xx + nativeSecond.non2xx}`,
  );
  console.log(
    `analytics.js /v1/b (the same events as the library batches them): ${rate(ajsEvents, 2 * SECONDS)} events, p99 ${p99(ajsFirst, ajsSecond)} ms, non-2xx ${ajsFirst.non2xx + ajsSecond.non2xx}`,
  );
  console.log(
    `ratio analytics.js / native browser batch: ${(ajsEvents / nativeEvents).toFixed(2)} (target >= 0.8)`,
  );
}

export async function benchCollector(): Promise<void> {
  console.log(`\n## collector: ${CONNECTIONS} connections, ${SECONDS} s per run`);
  const { dir, tenantToken } = await prepareDataDir();
  const cds = await startChild(
    [
      process.execPath,
      CDS_BIN,
      '--data-dir',
      dir,
      'serve',
      '--port',
      '0',
      '--quiet',
      '--no-ingest',
    ],
    /cds listening on (http:\/\/\S+)/,
    { CDS_COLLECTOR_RATE_LIMIT: '1000000000' },
  );
  const bare = await startChild(
    [
      process.execPath,
      '--import',
      'tsx',
      fileURLToPath(new URL('./bare-collector.ts', import.meta.url)),
    ],
    /bare listening on (http:\/\/\S+)/,
  );
  try {
    // The single-event runs come first, before the batch run leaves hundreds of MiB to write
    // back, and in the order cds, bare, bare, cds, so that drift in disk latency falls on both.
    const single = JSON.stringify(browserEvents(1)[0]);
    const headers = {
      'content-type': 'application/json',
      'x-tenant-id': TENANT,
      'x-workspace-id': WORKSPACES[0],
    };
    const singleRun = (server: { child: { pid?: number }; url: string }) =>
      measured(server.child.pid as number, {
        url: `${server.url}/v1/events`,
        method: 'POST',
        headers,
        body: single,
      });
    const cdsFirst = await singleRun(cds);
    const bareFirst = await singleRun(bare);
    const bareSecond = await singleRun(bare);
    const cdsSecond = await singleRun(cds);
    const cdsAcknowledged = cdsFirst.result['2xx'] + cdsSecond.result['2xx'];
    const bareAcknowledged = bareFirst.result['2xx'] + bareSecond.result['2xx'];
    // The wall-clock rate of both is bounded by the disk's fsyncs when the disk is slow, which
    // hides what a request costs; the CPU time each server spent per request shows it.
    const cdsMicros = ((cdsFirst.cpu + cdsSecond.cpu) / cdsAcknowledged) * 1e6;
    const bareMicros = ((bareFirst.cpu + bareSecond.cpu) / bareAcknowledged) * 1e6;
    const p99 = (a: autocannon.Result, b: autocannon.Result) =>
      Math.max(a.latency.p99, b.latency.p99);
    console.log(
      `single-event endpoint: cds ${rate(cdsAcknowledged, 2 * SECONDS)} (p99 ${p99(cdsFirst.result, cdsSecond.result)} ms, non-2xx ${cdsFirst.result.non2xx + cdsSecond.result.non2xx}), ${cdsMicros.toFixed(0)} µs CPU a request`,
    );
    console.log(
      `bare Fastify route with the same append: ${rate(bareAcknowledged, 2 * SECONDS)} (p99 ${p99(bareFirst.result, bareSecond.result)} ms), ${bareMicros.toFixed(0)} µs CPU a request`,
    );
    console.log(
      `ratio cds / bare: ${(cdsAcknowledged / bareAcknowledged).toFixed(2)} by rate, ${(bareMicros / cdsMicros).toFixed(2)} by CPU a request (target >= 0.85)`,
    );

    const batch = JSON.stringify({ events: browserEvents(500) });
    const batchRun = await load({
      url: `${cds.url}/v1/events/batch`,
      method: 'POST',
      headers,
      body: batch,
      connections: 8,
    });
    const batchEvents = batchRun['2xx'] * 500;
    console.log(
      `batch endpoint (500 events a request): ${rate(batchEvents, SECONDS)} events acknowledged durably, p99 ${batchRun.latency.p99} ms, non-2xx ${batchRun.non2xx} (target >= 150,000/s)`,
    );

    await benchSegmentBatch(cds.url, tenantToken);
    await benchAnalyticsJsBatch(cds.url, tenantToken, headers);
  } finally {
    await stopChild(cds.child);
    await stopChild(bare.child);
  }
}
