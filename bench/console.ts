import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { createSegment, DEFAULT_AUTOMATIONS } from '../src/segments/definitions.js';
import { evaluateAwaitingSegments } from '../src/segments/evaluate.js';
import { benchBehaviourPreviews } from './behaviour-previews.js';
import { openBenchContext, percentile, seedProfiles, segmentPredicates } from './segments.js';
import { CDS_BIN, prepareDataDir, startChild, stopChild, TENANT, WORKSPACES } from './setup.js';

const WORKSPACE = WORKSPACES[0];
const CONSOLE_ASSETS = 'dist/console/assets';
const ROUNDS = Number(process.env.BENCH_CONSOLE_ROUNDS ?? 5);
const ms = (value: number) => `${value.toFixed(1)} ms`;

/** What a browser downloads of the console: every asset as the server sends it, gzipped. */
function gzippedBytes(): { js: number; css: number } {
  const sizes = { js: 0, css: 0 };
  for (const name of readdirSync(CONSOLE_ASSETS)) {
    const bytes = readFileSync(join(CONSOLE_ASSETS, name)).length;
    if (name.endsWith('.js.gz')) sizes.js += bytes;
    if (name.endsWith('.css.gz')) sizes.css += bytes;
  }
  return sizes;
}

/**
 * `npm run bench -- console`: the console's numbers of issue 31. The bytes a browser downloads;
 * the round trip of a segment preview as the builder makes it (HTTP, from the console's origin)
 * at `profiles` profiles; and the time from opening the segment list to its first row, in Chromium.
 * Then, on the same data dir with `events` stored events, the previews of rules comparing
 * behaviours: first from the events, then once their segments exist (bench/behaviour-previews.ts).
 */
export async function benchConsole(profiles: number, events: number): Promise<void> {
  const sizes = gzippedBytes();
  console.log(
    `\nconsole: JavaScript ${(sizes.js / 1024).toFixed(1)} KB gzipped (limit 80 KB), CSS ${(sizes.css / 1024).toFixed(1)} KB`,
  );
  const { dir, tenantToken } = await prepareDataDir();
  const context = await openBenchContext(dir);
  await seedProfiles(context, profiles);
  const predicates = segmentPredicates();
  for (const [index, predicate] of predicates.entries())
    await createSegment(
      context,
      { tenantId: TENANT, workspaceId: WORKSPACE, segmentId: `s${String(index).padStart(2, '0')}` },
      {
        display_name: `segment ${index}`,
        predicate,
        status: 'active',
        automations: DEFAULT_AUTOMATIONS,
      },
    );
  await context.store.write((session) =>
    evaluateAwaitingSegments(session, { now: new Date().toISOString(), announce: false }),
  );
  await context.store.close();

  const server = await startChild(
    [process.execPath, CDS_BIN, 'serve', '-d', dir, '--port', '0', '--quiet'],
    /cds listening on (http:\/\/[^\s"]+)/,
  );
  try {
    const headers = { authorization: `Bearer ${tenantToken}`, 'content-type': 'application/json' };
    const timings: number[] = [];
    for (let round = 0; round < ROUNDS; round += 1)
      for (const predicate of predicates) {
        const started = performance.now();
        const response = await fetch(`${server.url}/v1/tenants/${TENANT}/segments/preview`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ workspace_id: WORKSPACE, predicate }),
        });
        await response.json();
        if (!response.ok) throw new Error(`preview answered ${response.status}`);
        timings.push(performance.now() - started);
      }
    console.log(
      `  preview round trip over HTTP at ${profiles.toLocaleString('en')} profiles (${timings.length} calls, 50 rules): p50 ${ms(percentile(timings, 50))}, p95 ${ms(percentile(timings, 95))}`,
    );

    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox'],
    });
    try {
      const renders: number[] = [];
      for (let round = 0; round < ROUNDS; round += 1) {
        const page = await (await browser.newContext()).newPage();
        await page.goto(`${server.url}/console/`);
        await page.getByLabel('Token').fill(tenantToken);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.getByRole('navigation', { name: 'Console' }).waitFor();
        const started = performance.now();
        await page.goto(`${server.url}/console/#/segments`);
        await page.getByRole('row').nth(1).waitFor();
        renders.push(performance.now() - started);
        await page.context().close();
      }
      console.log(
        `  segment list, from opening it to its first row (50 segments with live counts): p50 ${ms(percentile(renders, 50))}, max ${ms(Math.max(...renders))}`,
      );
    } finally {
      await browser.close();
    }
  } finally {
    await stopChild(server.child);
  }
  await benchBehaviourPreviews({ dir, tenantToken, profiles, events });
}
