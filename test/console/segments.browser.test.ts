import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ConsoleServer,
  expectAccessible,
  launchChromium,
  signIn,
  startConsoleServer,
} from '../helpers/console.js';

let served: ConsoleServer;
let browser: Browser;

const SEGMENTS = '/v1/tenants/acme/segments';

async function callApi(method: string, path: string, body?: unknown, token = served.tokens.tenant) {
  const response = await fetch(`${served.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

/** Events as a site sends them, through the collector the server runs, then ingested. */
async function visit(anon: string, name: string, properties: Record<string, unknown> = {}) {
  const response = await fetch(`${served.url}/v1/events/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tenant-id': 'acme', 'x-workspace-id': 'eu' },
    body: JSON.stringify({
      events: [
        {
          envelop_version: '1.0',
          id: randomUUID(),
          name,
          tenant_id: 'acme',
          workspace_id: 'eu',
          anon_id: `cookie:${anon}`,
          occured_at: new Date().toISOString(),
          properties,
        },
      ],
    }),
  });
  expect(response.status, await response.text()).toBe(202);
}

beforeAll(async () => {
  served = await startConsoleServer();
  browser = await launchChromium();
  for (const metric of [
    { metric_name: 'views', event_name: 'page_viewed', value_kind: 'count' },
    {
      metric_name: 'last_category',
      event_name: 'product_viewed',
      value_kind: 'property_string',
      value_path: 'properties.category',
      aggregation: 'latest',
    },
  ]) {
    const answer = await callApi('PUT', '/v1/tenants/acme/metric-definitions', metric);
    expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  }
  // a: three views; b: one; c: one view and shoes; d: shoes only.
  for (const anon of ['a', 'a', 'a', 'b', 'c']) await visit(anon, 'page_viewed');
  for (const anon of ['c', 'd']) await visit(anon, 'product_viewed', { category: 'shoes' });
  await served.server.ingestNow();
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await served?.close();
});

async function signedIn(token: string): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  page.on('dialog', () => {
    throw new Error('a dialog opened: data ran as script');
  });
  await signIn(page, served.url, token);
  return page;
}

const NESTED = {
  all: [
    { metric: 'views', op: 'gte', value: 1 },
    {
      any: [
        { metric: 'last_category', op: 'eq', value: 'shoes' },
        { not: { metric: 'views', op: 'lt', value: 2 } },
      ],
    },
  ],
};

describe('segments in the console (issue 31, item 5)', () => {
  it('builds a nested segment whose preview is the API preview, saves it and lists it', async () => {
    const page = await signedIn(served.tokens.tenant);
    await page.getByRole('link', { name: 'Segments' }).click();
    await page.getByRole('link', { name: 'New segment' }).click();
    await expectAccessible(page, 'the segment builder');

    const metric = (index: number) => page.getByLabel(/^Metric of condition/).nth(index);
    const operator = (index: number) => page.getByLabel(/^Operator of condition/).nth(index);
    const value = (index: number) => page.getByLabel(/^Value of condition/).nth(index);
    await metric(0).selectOption('views');
    await operator(0).selectOption('gte');
    await value(0).fill('1');
    await page.getByRole('button', { name: 'Add group', exact: true }).click();
    await metric(1).selectOption('last_category');
    await operator(1).selectOption('eq');
    await value(1).fill('shoes');
    await page.getByRole('button', { name: /^Add condition to group/ }).click();
    await metric(2).selectOption('views');
    await operator(2).selectOption('lt');
    await value(2).fill('2');
    await page.locator('li.condition').nth(2).getByLabel('not').check();

    const api = await callApi('POST', `${SEGMENTS}/preview`, {
      workspace_id: 'eu',
      predicate: NESTED,
    });
    expect(api.status).toBe(200);
    expect(api.body.matched_profiles).toBe(2);
    await expect
      .poll(() => page.getByTestId('preview-count').textContent())
      .toBe(String(api.body.matched_profiles));
    await expect
      .poll(() =>
        page
          .getByText('Profiles in the workspace')
          .locator('xpath=following-sibling::dd[1]')
          .textContent(),
      )
      .toBe(String(api.body.workspace_profiles));
    await expectAccessible(page, 'the segment builder with a preview');

    // A 409 is shown beside the id it names.
    await callApi('PUT', `${SEGMENTS}/taken`, {
      workspace_id: 'eu',
      display_name: 'Taken',
      predicate: { metric: 'views', op: 'gte', value: 1 },
    });
    await page.getByLabel('Id').fill('taken');
    await page.getByLabel('Display name').fill('Keen viewers');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await expect.poll(() => page.getByText(/segment taken already exists/).count()).toBe(1);

    await page.getByLabel('Id').fill('keen');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/#\/segments\/keen$/);
    const saved = await callApi('GET', `${SEGMENTS}/keen/definition?workspace_id=eu`);
    expect(saved.body.predicate).toEqual(NESTED);
    expect(saved.body.status).toBe('active');

    await page.getByRole('link', { name: 'Segments' }).click();
    await expect
      .poll(() => page.getByTestId('members-keen').textContent(), { timeout: 20_000 })
      .toBe('2');
    await expectAccessible(page, 'the segment list');

    // d views twice: now in by views >= 2 as well as shoes.
    await visit('d', 'page_viewed');
    await served.server.ingestNow();
    await expect
      .poll(() => page.getByTestId('members-keen').textContent(), { timeout: 20_000 })
      .toBe('3');

    // Status changes in place.
    await page.getByLabel('Status of Keen viewers').selectOption('paused');
    await expect
      .poll(
        async () =>
          (await callApi('GET', `${SEGMENTS}/keen/definition?workspace_id=eu`)).body.status,
      )
      .toBe('paused');
    await page.context().close();
  }, 120_000);

  it('shows a display_name made of markup as text, running nothing', async () => {
    const name = '<img src=x onerror=alert(1)>';
    const created = await callApi('PUT', `${SEGMENTS}/markup`, {
      workspace_id: 'eu',
      display_name: name,
      predicate: { metric: 'views', op: 'gte', value: 1 },
    });
    expect(created.status).toBe(201);
    const page = await signedIn(served.tokens.tenant);
    await page.goto(`${served.url}/console/#/segments`);
    await expect.poll(() => page.getByRole('link', { name }).count()).toBe(1);
    expect(await page.locator('main img').count()).toBe(0);
    await page.context().close();
  });

  it('shows a workspace token no write control', async () => {
    const page = await signedIn(served.tokens.workspace);
    await page.getByRole('link', { name: 'Segments' }).click();
    await expect.poll(() => page.getByRole('link', { name: 'Taken' }).count()).toBe(1);
    expect(await page.getByRole('link', { name: 'New segment' }).count()).toBe(0);
    expect(await page.getByRole('combobox', { name: /^Status of/ }).count()).toBe(0);
    await expectAccessible(page, 'the segment list of a workspace token');
    await page.goto(`${served.url}/console/#/segments/new`);
    await expect.poll(() => page.getByText(/read-only/).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Save segment' }).count()).toBe(0);
    await page.context().close();
  });
});
