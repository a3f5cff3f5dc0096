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

export async function benchCollector(): Promise<void> {
  console.log(`\n## collector: ${CONNECTIONS} connections, ${SECONDS} s per run`);
  const { dir } = await prepareDataDir();
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
    const singleRun = (url: string) =>
      load({ url: `${url}/v1/events`, method: 'POST', headers, body: single });
    const cdsFirst = await singleRun(cds.url);
    const bareFirst = await singleRun(bare.url);
    const bareSecond = await singleRun(bare.url);
    const cdsSecond = await singleRun(cds.url);
    const cdsAcknowledged = cdsFirst['2xx'] + cdsSecond['2xx'];
    const bareAcknowledged = bareFirst['2xx'] + bareSecond['2xx'];
    console.log(
      `single-event endpoint: cds ${rate(cdsAcknowledged, 2 * SECONDS)} (p99 ${Math.max(cdsFirst.latency.p99, cdsSecond.latency.p99)} ms, non-2xx ${cdsFirst.non2xx + cdsSecond.non2xx})`,
    );
    console.log(
      `bare Fastify route with the same append: ${rate(bareAcknowledged, 2 * SECONDS)} (p99 ${Math.max(bareFirst.latency.p99, bareSecond.latency.p99)} ms)`,
    );
    console.log(
      `ratio cds / bare: ${(cdsAcknowledged / bareAcknowledged).toFixed(2)} (target >= 0.7)`,
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
  } finally {
    await stopChild(cds.child);
    await stopChild(bare.child);
  }
}
