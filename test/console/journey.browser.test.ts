import { createServer, type Server } from 'node:http';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { close, listen } from '../helpers/collector-door.js';
import { expectAccessible, screenshot, signIn, useConsoleSuite } from '../helpers/console.js';
import { tenantCall } from '../helpers/site-library.js';

/**
 * Issue 31's "Must show" journey end to end: a shop on another origin sends events with the
 * browser SDK (cds.js from the server), the console's live view shows them with their outcome,
 * a segment's member count rises, and erasing the profile from its page makes it fall again.
 */
let site: Server;
let siteOrigin: string;
let console_: Page;

/** What the test calls in the shop's page (the test files are typed without the DOM). */
interface ShopGlobals {
  cds: { track(name: string, properties: unknown): string; flush(): Promise<void> };
}

/** A shop's page on another origin: loads cds.js from cds and starts it. */
function shopPage(cdsUrl: string): string {
  return `<!doctype html><html><head><title>shop</title>
<script src="${cdsUrl}/v1/cds.js"></script>
<script>
  cds.init({ url: '${cdsUrl}', tenant: 'acme', workspace: 'eu' });
</script></head><body>shoes</body></html>`;
}

async function api(method: string, path: string, body?: unknown): Promise<number> {
  return (await tenantCall(suite, method, path, body)).status;
}

const suite = useConsoleSuite();

beforeAll(async () => {
  site = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(shopPage(suite.served.url));
  });
  siteOrigin = `http://127.0.0.1:${await listen(site)}`;
  expect(
    await api('PUT', '/v1/tenants/acme/workspaces/eu', { allowed_origins: [siteOrigin] }),
  ).toBe(200);
  expect(
    await api('PUT', '/v1/tenants/acme/metric-definitions', {
      metric_name: 'views',
      event_name: 'page_viewed',
      value_kind: 'count',
    }),
  ).toBe(201);
  expect(
    await api('PUT', '/v1/tenants/acme/segments/viewers', {
      workspace_id: 'eu',
      display_name: 'Viewers',
      predicate: { metric: 'views', op: 'gte', value: 1 },
      status: 'active',
    }),
  ).toBe(201);
  console_ = await suite.newPage();
}, 60_000);

afterAll(async () => {
  if (site) await close(site);
});

describe("a marketer's journey through the console (issue 31, Must show)", () => {
  it('sees a shop visit from another origin live, the segment grow, and shrink again after an erasure', async () => {
    await signIn(console_, suite.served.url, suite.served.tokens.tenant);
    await console_.goto(`${suite.served.url}/console/#/segments`);
    const members = console_.getByTestId('members-viewers');
    await expect.poll(() => members.textContent(), { timeout: 20_000 }).toBe('0');

    // The shop, in a browser context of its own on its own origin.
    const shop = await suite.newPage();
    const sent = shop.waitForResponse(
      (response) => response.url().includes('/v1/events') && response.request().method() === 'POST',
    );
    await shop.goto(`${siteOrigin}/`);
    await shop.evaluate(() => {
      const { cds } = globalThis as unknown as ShopGlobals;
      cds.track('page_viewed', { path: '/shoes' });
      return cds.flush();
    });
    expect((await sent).status()).toBe(202);
    await suite.served.server.ingestNow();

    await expect.poll(() => members.textContent(), { timeout: 20_000 }).toBe('1');

    await console_.goto(`${suite.served.url}/console/#/live`);
    const visit = console_.getByRole('row').filter({ hasText: 'page_viewed' }).first();
    await visit.waitFor({ timeout: 20_000 });
    expect(await visit.textContent()).toMatch(/browser.*stored/);
    await screenshot(console_, 'live-events');
    await expectAccessible(console_, 'the live view with a visit');

    // The visitor's profile, from the live view, erased after its dry run.
    await visit.getByRole('link').click();
    await console_.getByRole('button', { name: /Dry run/ }).click();
    await console_.getByLabel('What erasing would remove').waitFor();
    const profileId = console_.url().split('#/profiles/')[1] ?? '';
    expect(profileId).toMatch(/^p_/);
    await console_.getByRole('button', { name: `Erase profile ${profileId}` }).click();
    await expect.poll(() => console_.getByRole('status').textContent()).toContain('it is gone');

    await console_.goto(`${suite.served.url}/console/#/segments`);
    await expect.poll(() => members.textContent(), { timeout: 20_000 }).toBe('0');
  });
});
