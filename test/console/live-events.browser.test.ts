import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleServer,
  expectAccessible,
  launchChromium,
  signIn,
  startConsoleServer,
} from '../helpers/console.js';
import { envelope } from '../helpers/events.js';

let served: ConsoleServer;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  served = await startConsoleServer();
  browser = await launchChromium();
  page = await (await browser.newContext()).newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
});

/** Browser events of workspace `eu` through the server's collector. */
async function send(events: Record<string, unknown>[]): Promise<void> {
  const response = await fetch(`${served.url}/v1/events/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' },
    body: JSON.stringify({ events }),
  });
  const answer = (await response.json()) as { accepted: number; rejected: unknown[] };
  expect(answer.rejected).toEqual([]);
  expect(answer.accepted).toBe(events.length);
}

/** As `send`, then one ingest batch. */
async function sendAndIngest(events: Record<string, unknown>[]): Promise<void> {
  await send(events);
  await served.server.ingestNow();
}

const rowOf = (name: string) => page.getByRole('row').filter({ hasText: name });

describe('the live events page (issue 31, item 3)', () => {
  it('shows each ingested line with its outcome as it comes, and a line opened beside the list while the feed goes on', async () => {
    await signIn(page, served.url, served.tokens.workspace);
    await page.goto(`${served.url}/console/#/live`);
    await expect.poll(() => page.getByRole('status').textContent()).toMatch(/live/);

    // signed_up is deleted between collecting and ingest: its line is rejected with a reason.
    await send([
      envelope({
        id: 'live-1',
        name: 'page_viewed',
        workspace: 'eu',
        anon: 'v1',
        identifiers: { email: 'ana@shop.test' },
      }),
      envelope({ id: 'live-2', name: 'signed_up', workspace: 'eu', anon: 'v2' }),
    ]);
    const deleted = await fetch(`${served.url}/v1/tenants/acme/event-types/signed_up`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${served.tokens.tenant}` },
    });
    expect(deleted.status).toBeLessThan(300);
    await served.server.ingestNow();
    await rowOf('page_viewed').first().waitFor();
    await expect.poll(() => rowOf('page_viewed').first().textContent()).toMatch(/stored/);
    await expect.poll(() => rowOf('signed_up').first().textContent()).toMatch(/rejected\s*\S+/);

    await rowOf('page_viewed').first().getByRole('button').click();
    const details = page.getByRole('complementary');
    await expect.poll(() => details.textContent()).toMatch(/live-1/);
    expect(await details.textContent()).not.toContain('ana@shop.test');

    // The feed goes on with the details open.
    await sendAndIngest([
      envelope({ id: 'live-3', name: 'product_viewed', workspace: 'eu', anon: 'v3' }),
    ]);
    await rowOf('product_viewed').first().waitFor();
    expect(await details.textContent()).toMatch(/live-1/);
    expect(await page.content()).not.toContain('ana@shop.test');
    await expectAccessible(page, 'the live events page');
  });

  it('filters by outcome', async () => {
    await page.getByLabel('Outcome').selectOption('rejected');
    await expect.poll(() => rowOf('page_viewed').count()).toBe(0);
    await expect.poll(() => rowOf('signed_up').count()).toBeGreaterThan(0);
  });
});
