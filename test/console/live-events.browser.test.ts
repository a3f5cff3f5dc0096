import { Analytics } from '@segment/analytics-node';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleServer,
  expectAccessible,
  launchChromium,
  pageWidth,
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

/** An identify call through `@segment/analytics-node`, its host the served collector. */
async function sendThroughSegment(): Promise<void> {
  const tenantCall = (method: string, path: string, body: unknown) =>
    fetch(`${served.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${served.tokens.tenant}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify(body),
    });
  expect(
    (await tenantCall('PUT', '/v1/tenants/acme/event-types/identify', {})).status,
  ).toBeLessThan(300);
  const minted = await tenantCall('POST', '/v1/tenants/acme/tokens', {
    kind: 'collector',
    name: 'segment eu',
    workspace_id: 'eu',
  });
  expect(minted.status).toBe(201);
  const { token } = (await minted.json()) as { token: string };
  const errors: unknown[] = [];
  const analytics = new Analytics({ writeKey: token, host: served.url, maxRetries: 0 });
  analytics.on('error', (error) => errors.push(error));
  analytics.identify({ anonymousId: 'visitor-segment', traits: { plan: 'gold' } });
  await analytics.closeAndFlush();
  expect(errors).toEqual([]);
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
    expect(await rowOf('page_viewed').first().textContent()).toMatch(/browser/);

    // An event of the Segment tracking API, sent by Segment's own server library, says so.
    await sendThroughSegment();
    await served.server.ingestNow();
    await rowOf('identify').first().waitFor();
    expect(await rowOf('identify').first().textContent()).toMatch(/Segment API/);
    await rowOf('identify').first().getByRole('button').click();
    await expect.poll(() => details.textContent()).toMatch(/SourceSegment API/);
    await expectAccessible(page, 'the live events page');
  });

  it('filters by outcome', async () => {
    await page.getByLabel('Outcome').selectOption('rejected');
    await expect.poll(() => rowOf('page_viewed').count()).toBe(0);
    await expect.poll(() => rowOf('signed_up').count()).toBeGreaterThan(0);
  });

  it('filters by source, the Segment API among them', async () => {
    await page.getByLabel('Outcome').selectOption('');
    await page.getByLabel('Source').selectOption({ label: 'Segment API' });
    await expect.poll(() => rowOf('identify').count()).toBe(1);
    await expect.poll(() => rowOf('page_viewed').count()).toBe(0);
    await page.getByLabel('Source').selectOption({ label: 'browser' });
    await expect.poll(() => rowOf('page_viewed').count()).toBeGreaterThan(0);
    await expect.poll(() => rowOf('identify').count()).toBe(0);
  });

  it("filters by a customer's email, looked up and never put in the address (issue 38, item 4)", async () => {
    await page.getByLabel('Source').selectOption('');
    // A backend's event: its email is an identifier (a browser's is not), so it finds the profile.
    const sent = await fetch(`${served.url}/v1/server/events/batch`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${served.tokens.collector}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        events: [
          envelope({ id: 'ada-1', name: 'page_viewed', identifiers: { email: 'ada@shop.test' } }),
        ],
      }),
    });
    expect(sent.status).toBe(202);
    await served.server.ingestNow();
    const customer = page.getByLabel("Customer's email or phone");
    const status = page.getByRole('status');
    await customer.fill('ada@shop.test');
    await customer.press('Tab');
    await expect
      .poll(() => status.textContent())
      .toMatch(/Showing the events of that email's profile, p_[0-9a-f]+\.$/);
    await expect.poll(() => rowOf('product_viewed').count()).toBe(0);
    await expect.poll(() => rowOf('page_viewed').count()).toBe(1);
    expect(await rowOf('page_viewed').textContent()).toContain('server');
    // Each line says who it is about: the profile's email, masked.
    expect(await rowOf('page_viewed').textContent()).toContain('a***@s***.test');
    expect(await page.content()).not.toContain('ada@shop.test');
    expect(page.url()).not.toContain('ada');
    await customer.fill('nobody@shop.test');
    await customer.press('Tab');
    await expect.poll(() => status.textContent()).toMatch(/No profile in eu has that email\.$/);
    await customer.fill('');
    await customer.press('Tab');
    await expect.poll(() => rowOf('product_viewed').count()).toBeGreaterThan(0);
  });

  it("keeps a line's details in view when it is opened 200 rows down, at every width, with times in the reader's zone (issue 38, item 4)", async () => {
    await sendAndIngest(
      Array.from({ length: 220 }, (_, index) =>
        envelope({ id: `bulk-${index}`, name: 'page_viewed', workspace: 'eu', anon: `b${index}` }),
      ),
    );
    const rows = page.getByRole('row');
    await expect.poll(() => rows.count()).toBeGreaterThan(201);
    // Each time is the reader's local one, the UTC instant on hover.
    expect(await rows.nth(1).locator('time').getAttribute('title')).toMatch(/Z \(UTC\)$/);
    const details = page.getByRole('complementary');
    const inView = async () => {
      const box = await details.boundingBox();
      const viewport = page.viewportSize();
      if (!box || !viewport) return false;
      return box.y >= 0 && box.y < viewport.height && box.x >= 0 && box.x < viewport.width;
    };
    for (const [width, height, nth] of [
      [1280, 800, 200],
      [360, 740, 210],
    ] as const) {
      await page.setViewportSize({ width, height });
      const row = rows.nth(nth);
      await row.scrollIntoViewIfNeeded();
      await row.getByRole('button').click();
      await expect.poll(() => details.textContent()).toContain(`bulk-${220 - nth}`);
      expect(await inView(), `${width} px`).toBe(true);
      // The details take the reader's focus: a keyboard or screen reader is there too.
      expect(
        await details
          .getByRole('heading', { level: 2 })
          .evaluate((heading) => heading === heading.ownerDocument.activeElement),
      ).toBe(true);
    }
    expect(await pageWidth(page)).toBeLessThanOrEqual(360);
    await expectAccessible(page, 'the live events page with details opened far down, 360 px wide');
    await page.setViewportSize({ width: 1280, height: 800 });
    // An accessibility scan of 220 rows at two widths: about 15 s on a quiet machine.
  }, 60_000);

  it('ends the feed within a second of its token being revoked, saying why, and does not reconnect', async () => {
    const tenantCall = (method: string, path: string, body?: unknown) =>
      fetch(`${served.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${served.tokens.tenant}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
    const minted = await tenantCall('POST', '/v1/tenants/acme/tokens', {
      kind: 'workspace',
      workspace_id: 'eu',
      name: 'console reader',
    });
    expect(minted.status).toBe(201);
    const { token, token_id } = (await minted.json()) as { token: string; token_id: string };
    const reader = await (await browser.newContext()).newPage();
    try {
      await signIn(reader, served.url, token);
      await reader.goto(`${served.url}/console/#/live`);
      const status = reader.getByRole('status');
      await expect.poll(() => status.textContent()).toMatch(/live/);
      const streams: string[] = [];
      reader.on('request', (request) => {
        if (request.url().endsWith('/events/stream')) streams.push(request.url());
      });

      expect((await tenantCall('DELETE', `/v1/tenants/acme/tokens/${token_id}`)).status).toBe(204);
      await expect
        .poll(() => status.textContent(), { timeout: 1_500 })
        .toBe('Feed: ended: unknown or revoked token');
      // Past the page's reconnect delay: a refused feed is not asked for again.
      await new Promise((resolve) => setTimeout(resolve, 3_500));
      expect(streams).toEqual([]);
    } finally {
      await reader.context().close();
    }
  });
});
