import { randomUUID } from 'node:crypto';
import { type AddressInfo, createServer } from 'node:net';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  expectAccessible,
  pageWidth,
  screenshot,
  signIn,
  useConsoleSuite,
} from '../helpers/console.js';

const SEGMENTS = '/v1/tenants/acme/segments';

async function callApi(
  method: string,
  path: string,
  body?: unknown,
  token = suite.served.tokens.tenant,
) {
  const response = await fetch(`${suite.served.url}${path}`, {
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
  const response = await fetch(`${suite.served.url}/v1/events/batch`, {
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

/** A port nothing listens on any more: connections to it are refused. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// A receiver that refuses every connection: deliveries fail with an error to show.
const suite = useConsoleSuite(async () => ({
  webhook_url: `http://127.0.0.1:${await closedPort()}/hooks`,
  webhook_secret: `whsec_${Buffer.from('console segments test secret').toString('base64')}`,
}));

beforeAll(async () => {
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
  await suite.served.server.ingestNow();
}, 90_000);

async function signedIn(token: string): Promise<Page> {
  const page = await suite.newPage();
  page.on('dialog', () => {
    throw new Error('a dialog opened: data ran as script');
  });
  await signIn(page, suite.served.url, token);
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
    const page = await signedIn(suite.served.tokens.tenant);
    await page.getByRole('link', { name: 'Segments', exact: true }).click();
    await page.getByRole('link', { name: 'New segment' }).click();
    await expectAccessible(page, 'the segment builder');

    const metric = (index: number) => page.getByLabel(/^Metric of condition/).nth(index);
    const operator = (index: number) => page.getByLabel(/^Operator of condition/).nth(index);
    const value = (index: number) => page.getByLabel(/^Value of condition/).nth(index);
    // A new rule starts empty: nothing to count yet, and no preview asked.
    await expect.poll(() => page.getByText('Add a condition to see who matches.').count()).toBe(1);
    expect(await metric(0).count()).toBe(0);
    await page.getByRole('button', { name: 'Add metric condition', exact: true }).click();
    // Each metric says what feeds it.
    expect(await metric(0).locator('option').allTextContents()).toEqual([
      'last_category: latest properties.category of product_viewed',
      'views: count of page_viewed',
    ]);
    await metric(0).selectOption('views');
    await operator(0).selectOption('gte');
    // Beyond what a metric value holds exactly: the preview's 422 is shown beside the condition.
    await value(0).fill('9007199254740993');
    await expect
      .poll(() => page.locator('li.condition').first().locator('.field-reason').textContent())
      .toMatch(/^must be between/);
    await value(0).fill('1');
    await expect.poll(() => page.locator('.field-reason').count()).toBe(0);
    // A new group starts with a behaviour; this rule compares metrics only.
    await page.getByRole('button', { name: 'Add group', exact: true }).click();
    await page.getByRole('button', { name: 'Remove condition 2.1' }).click();
    await page.getByRole('button', { name: 'Add metric condition to group 2' }).click();
    await metric(1).selectOption('last_category');
    await operator(1).selectOption('eq');
    await value(1).fill('shoes');
    await page.getByRole('button', { name: 'Add metric condition to group 2' }).click();
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
    // Beside the counts, the people who match, each a link to their profile (these visitors have
    // no email or phone, so their profile id names them).
    const sampled = (
      await callApi('POST', `${SEGMENTS}/preview`, {
        workspace_id: 'eu',
        predicate: NESTED,
        sample_size: 10,
      })
    ).body.sample as { profile_id: string }[];
    expect(sampled).toHaveLength(2);
    const sample = page.getByRole('list', { name: 'Some of the people who match' });
    await expect
      .poll(async () => (await sample.getByRole('link').allTextContents()).sort())
      .toEqual(sampled.map((person) => person.profile_id).sort());
    expect(await sample.getByRole('link').first().getAttribute('href')).toMatch(/^#\/profiles\/p_/);
    await expect
      .poll(() =>
        page
          .getByText('Profiles in the workspace')
          .locator('xpath=following-sibling::dd[1]')
          .textContent(),
      )
      .toBe(String(api.body.workspace_profiles));
    await expectAccessible(page, 'the segment builder with a preview');
    await screenshot(page, 'segment-builder');

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
    await expect
      .poll(() => page.getByTestId('member-count').textContent(), { timeout: 20_000 })
      .toBe('2');
    const saved = await callApi('GET', `${SEGMENTS}/keen/definition?workspace_id=eu`);
    expect(saved.body.predicate).toEqual(NESTED);
    expect(saved.body.status).toBe('active');

    await page.getByRole('link', { name: 'Segments', exact: true }).click();
    await expect
      .poll(() => page.getByTestId('members-keen').textContent(), { timeout: 20_000 })
      .toBe('2');
    await expectAccessible(page, 'the segment list');
    await screenshot(page, 'segment-list');

    // d, shoes only so far, views a page: now in by views >= 1 and shoes.
    await visit('d', 'page_viewed');
    await suite.served.server.ingestNow();
    await expect
      .poll(() => page.getByTestId('members-keen').textContent(), { timeout: 20_000 })
      .toBe('3');

    // The segment page: rule in words, the count over time (chart hidden, table read), members.
    await page.getByRole('link', { name: 'Keen viewers' }).click();
    await expect.poll(() => page.getByTestId('member-count').textContent()).toBe('3');
    const rule = await page.locator('pre.rule-text').textContent();
    expect(rule).toBe(
      [
        'All of:',
        '  views is at least 1',
        '  Any of:',
        '    last_category is "shoes"',
        '    None of:',
        '      views is less than 2',
      ].join('\n'),
    );
    expect(await page.locator('.chart').getAttribute('aria-hidden')).toBe('true');
    await expect.poll(() => page.locator('.chart canvas').count()).toBe(1);
    const overTime = page.getByRole('table').filter({ hasText: 'Member count after each change' });
    await expect
      .poll(() => overTime.locator('tbody tr').first().locator('td').nth(1).textContent())
      .toBe('3');
    // e views twice, in by not(views < 2): the page's count and table rise without a reload.
    await visit('e', 'page_viewed');
    await visit('e', 'page_viewed');
    await suite.served.server.ingestNow();
    await expect
      .poll(() => page.getByTestId('member-count').textContent(), { timeout: 20_000 })
      .toBe('4');
    await expect
      .poll(() => overTime.locator('tbody tr').first().locator('td').nth(1).textContent())
      .toBe('4');
    await page.getByRole('button', { name: 'Refresh members' }).click();
    const membersTable = page.getByRole('table').filter({ hasText: 'Identifiers masked' });
    await expect.poll(() => membersTable.locator('tbody tr').count()).toBe(4);
    await expectAccessible(page, 'the segment page');
    await screenshot(page, 'segment-page');

    // Segments are create-only: a new one starts from this rule, with the same preview.
    await page.getByRole('button', { name: 'Copy as a new segment' }).click();
    await page.waitForURL(/#\/segments\/new$/);
    const again = await callApi('POST', `${SEGMENTS}/preview`, {
      workspace_id: 'eu',
      predicate: NESTED,
    });
    await expect
      .poll(() => page.getByTestId('preview-count').textContent())
      .toBe(String(again.body.matched_profiles));
    expect(await value(2).inputValue()).toBe('2');
    expect(await page.locator('li.condition').nth(2).getByLabel('not').isChecked()).toBe(true);

    await page.getByRole('link', { name: 'Segments', exact: true }).click();
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

  it("shows a segment's deliveries with their errors, and retries a failed one", async () => {
    const created = await callApi('PUT', `${SEGMENTS}/shoppers`, {
      workspace_id: 'eu',
      display_name: 'Shoppers',
      predicate: { metric: 'last_category', op: 'exists', value: true },
      automations: { on_backfill: true },
    });
    expect(created.status).toBe(201);
    await suite.served.server.ingestNow();
    const deliveries = async () =>
      (await callApi('GET', `${SEGMENTS}/shoppers/webhooks?workspace_id=eu`)).body.webhooks as {
        webhook_id: string;
        status: string;
        last_error: string | null;
      }[];
    // The server's sender tries the refusing receiver on its own schedule.
    await expect
      .poll(async () => (await deliveries()).map((row) => row.last_error), { timeout: 20_000 })
      .toEqual(['connection refused', 'connection refused']);
    // A day of refusals, as a test cannot wait for it: the deliveries are given up.
    await suite.served.context.store.write((session) =>
      session.runText(
        "UPDATE webhook_outbox SET status = 'failed', next_attempt_at = NULL WHERE segment_id = 'shoppers'",
      ),
    );
    const page = await signedIn(suite.served.tokens.tenant);
    await page.goto(`${suite.served.url}/console/#/segments/shoppers`);
    const table = page.getByRole('table').filter({ hasText: 'Last error' });
    await expect.poll(() => table.locator('tbody tr').count()).toBe(2);
    expect(await table.getByText('connection refused').count()).toBe(2);
    expect(await table.getByText('failed').count()).toBe(2);
    await expectAccessible(page, 'the segment page with failed deliveries');
    await screenshot(page, 'segment-deliveries');
    const [first] = await deliveries();
    await page.getByRole('button', { name: `Retry delivery ${first?.webhook_id}` }).click();
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe('1 delivery queued again.');
    expect((await deliveries()).map((row) => row.status).sort()).toEqual(['failed', 'pending']);
    await page.getByRole('button', { name: 'Retry every failed delivery' }).click();
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe('1 delivery queued again.');
    // The status line says the same as after the first retry: the rows tell when this one is done.
    await expect
      .poll(async () => (await deliveries()).map((row) => row.status))
      .toEqual(['pending', 'pending']);
    await page.context().close();
  });

  it("the Webhooks page lists every segment's deliveries with their totals and retries a failed one (issue 38, item 5)", async () => {
    const created = await callApi('PUT', `${SEGMENTS}/viewers`, {
      workspace_id: 'eu',
      display_name: 'Viewers',
      predicate: { metric: 'views', op: 'gte', value: 1 },
      automations: { on_backfill: true },
    });
    expect(created.status).toBe(201);
    await suite.served.server.ingestNow();
    const deliveries = async () =>
      (await callApi('GET', '/v1/tenants/acme/webhooks?workspace_id=eu&segment_id=viewers')).body
        .webhooks as { webhook_id: string; status: string; last_error: string | null }[];
    // Every member of the backfill, tried once by the server's sender against the refusing port.
    await expect
      .poll(
        async () => {
          const rows = await deliveries();
          return rows.length > 1 && rows.every((row) => row.last_error === 'connection refused');
        },
        { timeout: 20_000 },
      )
      .toBe(true);
    const queued = (await deliveries()).length;
    await suite.served.context.store.write((session) =>
      session.runText(
        "UPDATE webhook_outbox SET status = 'failed', next_attempt_at = NULL WHERE segment_id = 'viewers'",
      ),
    );
    const totals = (await callApi('GET', '/v1/tenants/acme/webhook-totals?workspace_id=eu')).body;
    expect(totals.last_24h.failed).toBeGreaterThanOrEqual(queued);

    const page = await signedIn(suite.served.tokens.tenant);
    await page.getByRole('link', { name: 'Webhooks', exact: true }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    const byStatus = page.getByRole('table', { name: 'Deliveries queued, by status' });
    await expect
      .poll(async () =>
        byStatus
          .getByRole('row', { name: /^failed/ })
          .locator('td')
          .allTextContents(),
      )
      .toEqual([String(totals.last_24h.failed), String(totals.last_7d.failed)]);
    const port = new URL(suite.served.context.config.webhook_url as string).port;
    expect(await page.getByText(`127.0.0.1:${port}`, { exact: true }).count()).toBe(1);
    // Every segment's deliveries, each naming its segment as a link to its page.
    const table = page.getByRole('table').filter({ hasText: 'Last error' });
    await expect.poll(() => table.getByRole('link', { name: 'viewers' }).count()).toBe(queued);
    await expectAccessible(page, 'the Webhooks page with failed deliveries');
    const [first] = await deliveries();
    await page.getByRole('button', { name: `Retry delivery ${first?.webhook_id}` }).click();
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe('1 delivery queued again.');
    const statuses = (await deliveries()).map((row) => row.status);
    expect(statuses.filter((status) => status === 'pending')).toHaveLength(1);
    expect(statuses.filter((status) => status === 'failed')).toHaveLength(queued - 1);
    await page.setViewportSize({ width: 360, height: 740 });
    expect(await pageWidth(page)).toBeLessThanOrEqual(360);
    await screenshot(page, 'webhooks');
    await page.context().close();
  });

  it('shows a display_name made of markup as text, running nothing', async () => {
    const name = '<img src=x onerror=alert(1)>';
    const created = await callApi('PUT', `${SEGMENTS}/markup`, {
      workspace_id: 'eu',
      display_name: name,
      predicate: { metric: 'views', op: 'gte', value: 1 },
    });
    expect(created.status).toBe(201);
    const page = await signedIn(suite.served.tokens.tenant);
    await page.goto(`${suite.served.url}/console/#/segments`);
    await expect.poll(() => page.getByRole('link', { name }).count()).toBe(1);
    expect(await page.locator('main img').count()).toBe(0);
    await page.context().close();
  });

  it('fits 360 px wide: list, builder and segment page scroll down, never sideways', async () => {
    await callApi('PUT', `${SEGMENTS}/narrow`, {
      workspace_id: 'eu',
      display_name: 'A segment whose display name is long enough to wrap on a phone',
      predicate: { metric: 'views', op: 'gte', value: 1 },
    });
    const page = await signedIn(suite.served.tokens.tenant);
    await page.setViewportSize({ width: 360, height: 740 });
    const overflow = () =>
      page.evaluate(() => {
        const root = (
          globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }
        ).document.documentElement;
        return root.scrollWidth;
      });
    for (const [path, ready] of [
      ['#/segments', 'New segment'],
      ['#/segments/new', 'Save segment'],
      ['#/segments/narrow', 'Refresh members'],
    ] as const) {
      await page.goto(`${suite.served.url}/console/${path}`);
      await page.getByText(ready).first().waitFor();
      expect(await overflow(), path).toBeLessThanOrEqual(360);
    }
    await screenshot(page, 'segment-page-narrow');
    await page.context().close();
  });

  it('shows a workspace token no write control', async () => {
    const page = await signedIn(suite.served.tokens.workspace);
    await page.getByRole('link', { name: 'Segments', exact: true }).click();
    await expect.poll(() => page.getByRole('link', { name: 'Taken' }).count()).toBe(1);
    expect(await page.getByRole('link', { name: 'New segment' }).count()).toBe(0);
    expect(await page.getByRole('combobox', { name: /^Status of/ }).count()).toBe(0);
    await expectAccessible(page, 'the segment list of a workspace token');
    await page.getByRole('link', { name: 'Taken' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Taken' }).count()).toBe(1);
    expect(await page.getByRole('combobox', { name: 'Status' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /^Retry/ }).count()).toBe(0);
    await expectAccessible(page, 'the segment page of a workspace token');
    await page.goto(`${suite.served.url}/console/#/segments/new`);
    await expect.poll(() => page.getByText(/read-only/).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Save segment' }).count()).toBe(0);
    await page.context().close();
  });

  // Last: its orders and product views would change what the tests above count.
  it('builds "at least 2 orders in 30 days and viewed a product" with no metric for it, saves it, copies it and filters People by it (issue 38)', async () => {
    const ordersBefore = await callApi('GET', '/v1/tenants/acme/metric-definitions');
    expect(
      ordersBefore.body.metric_definitions.filter(
        (definition: { event_name: string }) => definition.event_name === 'order_completed',
      ),
    ).toEqual([]);
    // o1: two orders and a product seen; o2: two orders; o3: one order and a product seen.
    let order = 0;
    const buy = (anon: string) =>
      visit(anon, 'order_completed', { order_id: `c${++order}`, total: 40 + order * 10 });
    for (const anon of ['o1', 'o1', 'o2', 'o2', 'o3']) await buy(anon);
    for (const anon of ['o1', 'o3']) await visit(anon, 'product_viewed', { category: 'bags' });
    await suite.served.server.ingestNow();
    const predicate = {
      all: [
        { event: 'order_completed', op: 'gte', value: 2, within_days: 30 },
        { event: 'product_viewed', op: 'gte', value: 1 },
      ],
    };

    const page = await signedIn(suite.served.tokens.tenant);
    await page.goto(`${suite.served.url}/console/#/segments/new`);
    await page.getByRole('button', { name: 'Add behaviour', exact: true }).click();
    await page.getByLabel('Event of condition 1').selectOption('order_completed');
    await page.getByLabel('How many times, condition 1').selectOption('gte');
    await page.getByLabel('Times of condition 1').fill('2');
    await page.getByLabel('Days of condition 1 (empty: ever)').fill('30');
    await page.getByRole('button', { name: 'Add behaviour', exact: true }).click();
    await page.getByLabel('Event of condition 2').selectOption('product_viewed');

    const api = await callApi('POST', `${SEGMENTS}/preview`, { workspace_id: 'eu', predicate });
    expect(api.status, JSON.stringify(api.body)).toBe(200);
    expect(api.body.matched_profiles).toBe(1);
    await expect
      .poll(() => page.getByTestId('preview-count').textContent())
      .toBe(String(api.body.matched_profiles));
    await expectAccessible(page, 'the segment builder with behaviours');
    await page.setViewportSize({ width: 360, height: 740 });
    expect(await pageWidth(page), 'the builder with behaviours at 360 px').toBeLessThanOrEqual(360);
    await page.setViewportSize({ width: 1280, height: 800 });

    await page.getByLabel('Id', { exact: true }).fill('repeat-buyers');
    await page.getByLabel('Display name').fill('Repeat buyers who browse');
    // No webhooks: the deliveries the other tests count are theirs.
    await page.getByLabel('when a profile enters').uncheck();
    await page.getByLabel('when a profile leaves').uncheck();
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/#\/segments\/repeat-buyers$/);
    const saved = await callApi('GET', `${SEGMENTS}/repeat-buyers/definition?workspace_id=eu`);
    expect(saved.body.predicate).toEqual(predicate);
    await expect
      .poll(() => page.getByTestId('member-count').textContent(), { timeout: 20_000 })
      .toBe('1');
    expect(await page.locator('pre.rule-text').textContent()).toBe(
      [
        'All of:',
        '  did order_completed at least 2 times in the last 30 days',
        '  did product_viewed at least 1 time',
      ].join('\n'),
    );
    // o2 looks at a product: the count rises without a reload.
    await visit('o2', 'product_viewed', { category: 'shoes' });
    await suite.served.server.ingestNow();
    await expect
      .poll(() => page.getByTestId('member-count').textContent(), { timeout: 20_000 })
      .toBe('2');

    // A copy starts from the same behaviours; a property filter narrows the first.
    await page.getByRole('button', { name: 'Copy as a new segment' }).click();
    await page.waitForURL(/#\/segments\/new$/);
    await expect.poll(() => page.getByLabel('Times of condition 1').inputValue()).toBe('2');
    expect(await page.getByLabel('Days of condition 1 (empty: ever)').inputValue()).toBe('30');
    await expect.poll(() => page.getByTestId('preview-count').textContent()).toBe('2');
    await page.getByRole('button', { name: 'Add property filter to condition 1' }).click();
    await page.getByLabel('Field of property filter 1.1').fill('total');
    await page.getByLabel('Operator of property filter 1.1').selectOption('gt');
    await page.getByLabel('Value of property filter 1.1').fill('55');
    const filtered = await callApi('POST', `${SEGMENTS}/preview`, {
      workspace_id: 'eu',
      predicate: {
        all: [
          {
            event: 'order_completed',
            op: 'gte',
            value: 2,
            within_days: 30,
            where: { path: 'properties.total', op: 'gt', value: 55 },
          },
          { event: 'product_viewed', op: 'gte', value: 1 },
        ],
      },
    });
    // o1's orders totalled 50 and 60, o2's 70 and 80: only o2 has two over 55.
    expect(filtered.body.matched_profiles).toBe(1);
    await expect.poll(() => page.getByTestId('preview-count').textContent()).toBe('1');
    await expectAccessible(page, 'the copy with a property filter');

    // People, narrowed to the segment: its two members.
    const members = (
      await callApi('GET', `${SEGMENTS}/repeat-buyers/members?workspace_id=eu`)
    ).body.members.map((member: { profile_id: string }) => member.profile_id);
    expect(members).toHaveLength(2);
    await page.goto(`${suite.served.url}/console/#/profiles`);
    await page.getByLabel('Segment').selectOption('repeat-buyers');
    const people = page.getByRole('table', { name: /^Identifiers masked/ });
    await expect
      .poll(async () => (await people.locator('tbody th').allTextContents()).sort())
      .toEqual([...members].sort());
    await page.context().close();
  }, 120_000);

  it("asks which consent a segment's webhooks need, and says how many members lack it (issue 39, item 6)", async () => {
    const workspace = await callApi('PUT', '/v1/tenants/acme/workspaces/eu', {
      consent_categories: ['marketing', 'analytics'],
      consent_default: 'deny',
    });
    expect(workspace.status).toBe(200);
    await visit('consenting', 'signed_up', { consent: { marketing: true } });
    await visit('silent', 'signed_up');
    await suite.served.server.ingestNow();

    const page = await signedIn(suite.served.tokens.tenant);
    await page.goto(`${suite.served.url}/console/#/segments/new`);
    await page.getByRole('heading', { name: 'New segment in eu' }).waitFor();
    await page.getByRole('button', { name: 'Add behaviour', exact: true }).click();
    await page.getByLabel('Event of condition 1').selectOption('signed_up');
    const consent = page.getByRole('group', { name: 'Webhooks need consent to' });
    expect(await consent.getByRole('checkbox').count()).toBe(2);
    await consent.getByLabel('marketing').check();
    await page.getByLabel('Id', { exact: true }).fill('signups');
    await page.getByLabel('Display name').fill('Sign-ups');
    await page.getByRole('button', { name: 'Save segment' }).click();
    await page.waitForURL(/#\/segments\/signups$/);
    const saved = await callApi('GET', `${SEGMENTS}/signups/definition?workspace_id=eu`);
    expect(saved.body.required_consent).toEqual(['marketing']);
    await expect
      .poll(() => page.getByTestId('member-count').textContent(), { timeout: 20_000 })
      .toBe('2');
    // The visitor who never chose, under the deny default, lacks it.
    await expect
      .poll(() => page.getByTestId('members-without-consent').textContent(), { timeout: 20_000 })
      .toBe('1');
    await expectAccessible(page, 'a segment whose webhooks need consent');
    await page.context().close();
  }, 60_000);
});
