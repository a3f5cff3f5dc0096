import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { type PageFaults, signIn, useConsoleSuite, watchFaults } from '../helpers/console.js';

const suite = useConsoleSuite();

/**
 * A text metric, first by name: the builder's first condition goes on it with `is ""`, a complete
 * rule, so it asks for a preview as soon as the condition is added.
 */
beforeAll(async () => {
  const answer = await fetch(`${suite.served.url}/v1/tenants/acme/metric-definitions`, {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${suite.served.tokens.tenant}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({
      metric_name: 'category',
      event_name: 'product_viewed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'latest',
    }),
  });
  expect(answer.status, await answer.text()).toBe(201);
});

/**
 * A quiet network for longer than anything a page starts on its own once shown waits (the
 * builder's preview waits 300 ms after the last change), so what it asks on opening has been
 * asked and answered.
 */
const QUIET_MS = 500;

async function openEachPage(page: Page, faults: PageFaults): Promise<string[]> {
  const navigation = page.getByRole('navigation', { name: 'Console' });
  const titles = await navigation.getByRole('link').allTextContents();
  for (const title of titles) {
    await navigation.getByRole('link', { name: title, exact: true }).click();
    await page.getByRole('heading', { level: 1 }).first().waitFor();
    await faults.settled(QUIET_MS);
  }
  return titles;
}

const TOKENS = [
  ['a tenant token', () => suite.served.tokens.tenant],
  ['a read-only workspace token', () => suite.served.tokens.workspace],
  ['the operator credential', () => suite.served.operator],
] as const;

describe('the console makes no failing request (issue 36, item 8)', () => {
  it('answers the site icon at /favicon.ico and where index.html links it', async () => {
    const html = await (await fetch(`${suite.served.url}/console/`)).text();
    const linked = /<link rel="icon" href="([^"]+)"/.exec(html)?.[1];
    expect(linked).toBe('favicon.svg');
    for (const path of ['/favicon.ico', `/console/${linked}`]) {
      const icon = await fetch(`${suite.served.url}${path}`);
      expect(icon.status, path).toBe(200);
      expect(icon.headers.get('content-type'), path).toMatch(/^image\/svg\+xml/);
      expect(await icon.text(), path).toMatch(/^<svg /);
    }
  });

  it('shows the sign-in page with no failed request and no console error', async () => {
    const page = await suite.newPage();
    const faults = watchFaults(page);
    await page.goto(`${suite.served.url}/console/`);
    await page.getByLabel('Token').waitFor();
    await faults.settled(QUIET_MS);
    expect(faults.lines).toEqual([]);
    await page.context().close();
  });

  it.each(TOKENS)(
    'opens every page for %s with no failed request and no console error',
    async (_kind, token) => {
      const page = await suite.newPage();
      const faults = watchFaults(page);
      await signIn(page, suite.served.url, token());
      const opened = await openEachPage(page, faults);
      expect(opened.length).toBeGreaterThanOrEqual(5);
      expect(faults.lines).toEqual([]);
      await page.context().close();
    },
  );

  it('opens the segment builder for a read-only token without asking for a preview', async () => {
    const page = await suite.newPage();
    const faults = watchFaults(page);
    const previews: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/segments/preview')) previews.push(request.url());
    });
    await signIn(page, suite.served.url, suite.served.tokens.workspace);
    await page.goto(`${suite.served.url}/console/#/segments/new`);
    await page.getByText('This token is read-only: it cannot create segments.').waitFor();
    await faults.settled(QUIET_MS);
    expect(previews).toEqual([]);
    expect(faults.lines).toEqual([]);

    // A tenant token on the same page asks for one once its rule has a condition.
    const writer = await suite.newPage();
    const writerFaults = watchFaults(writer);
    const asked: number[] = [];
    writer.on('response', (response) => {
      if (response.url().includes('/segments/preview')) asked.push(response.status());
    });
    await signIn(writer, suite.served.url, suite.served.tokens.tenant);
    await writer.goto(`${suite.served.url}/console/#/segments/new`);
    await writer.getByRole('heading', { name: 'New segment in eu' }).waitFor();
    // A new rule starts empty; its first condition is complete, and is previewed.
    await writer.getByRole('button', { name: 'Add metric condition', exact: true }).click();
    await expect.poll(() => asked).toEqual([200]);
    await writerFaults.settled(QUIET_MS);
    expect(asked).toEqual([200]);
    expect(writerFaults.lines).toEqual([]);
    await page.context().close();
    await writer.context().close();
  });
});
