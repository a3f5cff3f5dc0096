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
    const batch = JSON.stringify({ events: browserEvents(500) });
    const batchRun = await load({
      url: `${cds.url}/v1/events/batch`,
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-tenant-id': TENANT,
        'x-workspace-id': WORKSPACES[0],
      },
      body: batch,
      connections: 8,
    });
    const batchEvents = batchRun['2xx'] * 500;
    console.log(
      `batch endpoint (500 events a request): ${rate(batchEvents, SECONDS)} events acknowledged durably, p99 ${batchRun.latency.p99} ms, non-2xx ${batchRun.non2xx} (target >= 150,000/s)`,
    );

    const single = JSON.stringify(browserEvents(1)[0]);
    const headers = {
      'content-type': 'application/json',
      'x-tenant-id': TENANT,
      'x-workspace-id': WORKSPACES[0],
    };
    const cdsSingle = await load({
      url: `${cds.url}/v1/events`,
      method: 'POST',
      headers,
      body: single,
    });
    const bareSingle = await load({
      url: `${bare.url}/v1/events`,
      method: 'POST',
      headers,
      body: single,
    });
    const cdsRate = cdsSingle['2xx'] / SECONDS;
    const bareRate = bareSingle['2xx'] / SECONDS;
    console.log(
      `single-event endpoint: cds ${rate(cdsSingle['2xx'], SECONDS)} (p99 ${cdsSingle.latency.p99} ms, non-2xx ${cdsSingle.non2xx})`,
    );
    console.log(
      `bare Fastify route with the same append: ${rate(bareSingle['2xx'], SECONDS)} (p99 ${bareSingle.latency.p99} ms)`,
    );
    console.log(`ratio cds / bare: ${(cdsRate / bareRate).toFixed(2)} (target >= 0.7)`);
  } finally {
    await stopChild(cds.child);
    await stopChild(bare.child);
  }
}
