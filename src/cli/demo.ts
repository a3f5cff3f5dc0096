import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkDataDir } from '../config.js';
import { generateEvents } from '../demo/generator.js';
import { sendToCollector } from '../demo/load.js';
import { DemoReceiver } from '../demo/receiver.js';
import { ValidationError } from '../errors.js';
import { PRIVATE_FILE_MODE } from '../store/file-modes.js';
import type { GlobalOptions } from './admin-request.js';
import { DEMO_TENANT, DEMO_WORKSPACES, type DemoTokens, setUpDemo } from './demo-setup.js';
import { cleaningUpOnFailure } from './on-failure.js';
import { openContext } from './open-context.js';
import { closeOnSignals, type RunningServer, startServer } from './serve.js';

const MARKER = '.cds-demo';
const DEMO_EVENTS = 5000;
const DEMO_VISITORS = 600;
const DAY_MS = 24 * 60 * 60 * 1000;

/** Starts from an empty folder each time, but never wipes one that the demo did not make. */
function freshDemoDir(dir: string): void {
  checkDataDir(dir);
  if (existsSync(dir) && readdirSync(dir).length > 0) {
    if (!existsSync(join(dir, MARKER))) {
      throw ValidationError.field(
        '--data-dir',
        `${dir} is not empty and was not made by cds demo; pick another folder`,
      );
    }
    rmSync(dir, { recursive: true, force: true });
  }
}

function instructions(url: string, tokens: DemoTokens): string {
  const preview = JSON.stringify({
    workspace_id: 'brand-eu',
    predicate: {
      any: [
        { metric: 'revenue', op: 'gte', value: 500 },
        { metric: 'orders', op: 'gte', value: 3 },
      ],
    },
  });
  return [
    '',
    `Demo tenant "${DEMO_TENANT}" with workspaces brand-eu and brand-us is ready.`,
    '',
    `  tenant token     ${tokens.tenant}`,
    `  workspace token  ${tokens.workspace}   (brand-eu, read-only)`,
    `  collector token  ${tokens.collector}`,
    '',
    `Console: ${url}/console/  (paste the tenant token to sign in; the workspace token is read-only)`,
    '',
    'Try:',
    `  curl -s ${url}/v1/whoami -H 'authorization: Bearer ${tokens.workspace}'`,
    `  curl -s '${url}/v1/tenants/${DEMO_TENANT}/segments?workspace_id=brand-eu' -H 'authorization: Bearer ${tokens.workspace}'`,
    `  curl -s -X POST ${url}/v1/tenants/${DEMO_TENANT}/segments/preview -H 'authorization: Bearer ${tokens.tenant}' -H 'content-type: application/json' -d '${preview}'`,
    `  curl -s '${url}/v1/tenants/${DEMO_TENANT}/workspaces/brand-eu/profiles/summary?limit=5' -H 'authorization: Bearer ${tokens.workspace}'`,
    '',
    'New webhooks are printed below as they arrive. Press Ctrl-C to stop.',
    '',
  ].join('\n');
}

/** Webhooks go out a little after the commit; wait until a quarter second passes without one. */
async function waitForQuiet(receiver: DemoReceiver): Promise<void> {
  let seen = -1;
  while (seen !== receiver.received.length) {
    seen = receiver.received.length;
    await new Promise((done) => setTimeout(done, 750));
  }
}

async function segmentSummary(url: string, tokens: DemoTokens): Promise<string> {
  const lines = ['Segments filled by the demo events:'];
  for (const workspace of DEMO_WORKSPACES) {
    const response = await fetch(
      `${url}/v1/tenants/${DEMO_TENANT}/segments?workspace_id=${workspace}`,
      { headers: { authorization: `Bearer ${tokens.tenant}` } },
    );
    const { segments } = (await response.json()) as {
      segments: { segment_id: string; member_count: number }[];
    };
    for (const segment of segments) {
      lines.push(
        `  ${workspace.padEnd(9)} ${segment.segment_id.padEnd(24)} ${segment.member_count} members`,
      );
    }
  }
  return lines.join('\n');
}

function webhookSummary(receiver: DemoReceiver): string {
  const count = (type: string) =>
    receiver.received.filter((webhook) => webhook.type === type).length;
  const verified = receiver.received.every((webhook) => webhook.verified);
  return [
    `Webhooks received by the demo receiver at ${receiver.url}:`,
    `  ${count('segment.entered')} segment.entered, ${count('segment.exited')} segment.exited, ${verified ? 'every signature verified' : 'SOME SIGNATURES DID NOT VERIFY'}`,
  ].join('\n');
}

/**
 * Sends the demo's events of the 30 days before `now` through the collector, ingests them and
 * prints what they did.
 */
async function loadDemoEvents(
  server: RunningServer,
  tokens: DemoTokens,
  receiver: DemoReceiver,
  now: Date,
): Promise<void> {
  const events = generateEvents({
    seed: 42,
    tenantId: DEMO_TENANT,
    workspaceIds: DEMO_WORKSPACES,
    events: DEMO_EVENTS,
    visitors: DEMO_VISITORS,
    start: new Date(now.getTime() - 30 * DAY_MS),
    end: now,
  });
  const sent = await sendToCollector(server.url, tokens.collector, events);
  await server.ingestNow();
  process.stdout.write(
    `Sent ${sent.accepted} demo events through the collector and ingested them.\n`,
  );
  await waitForQuiet(receiver);
  process.stdout.write(
    `${await segmentSummary(server.url, tokens)}\n${webhookSummary(receiver)}\n`,
  );
}

/** `cds demo`: a fresh demo data dir, its tenant and events, served until a signal. */
export async function runDemo(globals: GlobalOptions, options: { port?: string }): Promise<void> {
  const dir = resolve(globals.dataDir ?? './cds-demo');
  freshDemoDir(dir);
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const receiver = await DemoReceiver.start(secret);
  // The receiver keeps the process alive: it closes however the demo ends.
  try {
    const context = await openContext(
      {
        data_dir: dir,
        port: options.port,
        webhook_url: receiver.url,
        webhook_secret: secret,
        webhook_retry_base_ms: 1000,
      },
      'create',
    );
    writeFileSync(join(dir, MARKER), 'made by cds demo; removed and recreated on each run\n', {
      mode: PRIVATE_FILE_MODE,
    });
    const tokens = await setUpDemo(context);
    const server = await cleaningUpOnFailure(
      startServer(context, { logRequests: false, ingest: true }),
      () => context.store.close(),
    );
    await cleaningUpOnFailure(loadDemoEvents(server, tokens, receiver, context.clock.now()), () =>
      server.close(),
    );
    receiver.onWebhook = (webhook) =>
      process.stdout.write(
        `webhook  ${webhook.type}  ${webhook.segmentId}  ${webhook.profileId}${webhook.verified ? '' : '  (bad signature)'}\n`,
      );
    const closed = closeOnSignals(server);
    process.stdout.write(instructions(server.url, tokens));
    await closed;
  } finally {
    await receiver.close();
  }
}
