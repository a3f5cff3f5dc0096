import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { type QuarantinedFile, quarantineDir } from '../../src/quarantine/quarantine.js';
import {
  expectAccessible,
  pageWidth,
  screenshot,
  signIn,
  useConsoleSuite,
} from '../helpers/console.js';

const HOSTILE = '<img src=x onerror=globalThis.injected=true>';
const EMAIL = 'ada.lovelace@example.com';

const suite = useConsoleSuite();

async function signedIn(token: string, colorScheme: 'light' | 'dark' = 'light'): Promise<Page> {
  const page = await suite.newPage({ colorScheme });
  // A script run by an injected name would set this.
  await page.addInitScript(() => {
    (globalThis as unknown as { injected: boolean }).injected = false;
  });
  await signIn(page, suite.served.url, token);
  return page;
}

async function open(page: Page, hash: string, heading: string): Promise<void> {
  await page.evaluate((target) => {
    (globalThis as unknown as { location: { hash: string } }).location.hash = target;
  }, hash);
  await page.getByRole('heading', { level: 1, name: heading }).waitFor();
}

/** Sends events through the server's collector, as a shop's backend does, and ingests them. */
async function sendEvents(
  events: Record<string, unknown>[],
  beforeIngest: () => Promise<void> = async () => undefined,
): Promise<void> {
  const sent = await fetch(`${suite.served.url}/v1/server/events/batch`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${suite.served.tokens.collector}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify({ events }),
  });
  expect(sent.status).toBeLessThan(300);
  await beforeIngest();
  await suite.served.server.ingestNow();
}

function event(name: string, properties: Record<string, unknown>): Record<string, unknown> {
  return {
    envelop_version: '1.0',
    id: crypto.randomUUID(),
    name,
    tenant_id: 'acme',
    workspace_id: 'eu',
    occured_at: new Date().toISOString(),
    properties,
  };
}

function apiGet(path: string, token: string): Promise<Response> {
  return fetch(`${suite.served.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

describe('the catalog page (issue 31, item 4)', () => {
  it('registers an event type and a metric, shows a 422 reason beside its field, and counts events', async () => {
    const page = await signedIn(suite.served.tokens.tenant);
    await open(page, '#/catalog', 'Catalog');
    const types = page.getByRole('region', { name: 'Event types' });
    await types.getByRole('rowheader', { name: 'page_viewed' }).waitFor();

    // Only one of the dedup pair: the API names the missing one, shown beside it.
    await page.getByLabel('Event name').fill('order_refunded');
    await page.getByLabel('Dedup entity').fill('order');
    await page.getByRole('button', { name: 'Register' }).click();
    await expect
      .poll(() => page.locator('#dedup-key-paths-reason').textContent())
      .toContain('dedup_entity and dedup_key_paths are given together');
    await page.getByLabel('Dedup key paths').fill('properties.order_id');
    await page.getByRole('button', { name: 'Register' }).click();
    await types.getByRole('rowheader', { name: 'order_refunded' }).waitFor();
    await expect
      .poll(() => types.getByRole('row', { name: /order_refunded/ }).textContent())
      .toContain('order: properties.order_id');

    // A property metric without its path: 422, the reason beside "Value path".
    await page.getByLabel('Metric name').fill('refund_total');
    await page.getByLabel('Event', { exact: true }).selectOption('order_refunded');
    await page.getByLabel('Value kind').selectOption('property_number');
    await page.getByLabel('Display name').fill(HOSTILE);
    await page.getByRole('button', { name: 'Create metric' }).click();
    await expect
      .poll(() => page.locator('#metric-value_path-reason').textContent())
      .toBe('is required for value_kind property_number');
    expect(await page.getByLabel('Value path').getAttribute('aria-invalid')).toBe('true');
    await expectAccessible(page, 'the catalog with a refused metric');

    await page.getByLabel('Value path').fill('properties.amount');
    await page.getByLabel('Window in days').fill('30');
    await page.getByRole('button', { name: 'Create metric' }).click();
    const metrics = page.getByRole('region', { name: 'Metric definitions' });
    await metrics.getByRole('rowheader', { name: 'refund_total' }).waitFor();
    // The injected display name is shown as its characters and ran nothing.
    await expect.poll(() => metrics.getByText(HOSTILE, { exact: true }).count()).toBe(1);
    expect(await page.locator('main img').count()).toBe(0);
    expect(
      await page.evaluate(() => (globalThis as unknown as { injected: boolean }).injected),
    ).toBe(false);

    // Events stored now are counted in both columns after a reload of the page.
    await sendEvents([
      event('order_refunded', {
        order_id: 'o-1',
        amount: 12,
        identifiers: { email: 'x@example.com' },
      }),
      event('order_refunded', {
        order_id: 'o-2',
        amount: 8,
        identifiers: { email: 'x@example.com' },
      }),
    ]);
    await page.reload();
    await page.getByRole('navigation', { name: 'Console' }).waitFor();
    await expect
      .poll(async () =>
        (
          await types
            .getByRole('row', { name: /order_refunded/ })
            .locator('td')
            .allTextContents()
        ).slice(1, 3),
      )
      .toEqual(['2', '2']);

    // Deleting asks first and names what depends on it (issue 38, item 6). A segment on the
    // metric, made through the API.
    const segment = await fetch(`${suite.served.url}/v1/tenants/acme/segments/refunders`, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${suite.served.tokens.tenant}`,
        'content-type': 'application/json',
      },
      body: JSON.stringify({
        workspace_id: 'eu',
        display_name: 'Refunders',
        predicate: { metric: 'refund_total', op: 'gt', value: 0 },
      }),
    });
    expect(segment.status).toBe(201);
    // The event type cannot go while the metric reads it: the dialog says which, and only closes.
    await types.getByRole('button', { name: 'Delete event type order_refunded' }).click();
    const refusal = page.getByRole('dialog', { name: 'Delete event type order_refunded?' });
    await expect
      .poll(() =>
        refusal
          .getByRole('list', { name: 'Metric definitions reading order_refunded' })
          .textContent(),
      )
      .toBe('refund_total (every workspace)');
    expect(await refusal.getByRole('button', { name: /^Delete/ }).count()).toBe(0);
    await expectAccessible(page, 'the dialog refusing to delete an event type');
    await page.keyboard.press('Escape');
    await expect.poll(() => refusal.count()).toBe(0);

    // The metric's dialog names the segment and what becomes of it; Cancel deletes nothing.
    const deleteMetric = metrics.getByRole('button', {
      name: 'Delete metric refund_total of order_refunded',
    });
    await deleteMetric.click();
    const asked = page.getByRole('dialog', {
      name: 'Delete metric refund_total of order_refunded?',
    });
    await expect
      .poll(() => asked.getByRole('list', { name: 'Segments using refund_total' }).textContent())
      .toBe(
        'Refunders (refunders in eu, active): goes on with the values kept, which no longer change',
      );
    await asked.getByRole('button', { name: 'Cancel' }).click();
    await expect.poll(() => asked.count()).toBe(0);
    expect(await metrics.getByRole('rowheader', { name: 'refund_total' }).count()).toBe(1);
    await deleteMetric.click();
    await asked.getByRole('button', { name: 'Delete metric refund_total' }).click();
    await expect
      .poll(() => metrics.getByRole('rowheader', { name: 'refund_total' }).count())
      .toBe(0);
    await types.getByRole('button', { name: 'Delete event type order_refunded' }).click();
    const confirmType = page.getByRole('dialog', { name: 'Delete event type order_refunded?' });
    await confirmType.getByRole('button', { name: 'Delete event type order_refunded' }).click();
    await expect
      .poll(() => types.getByRole('rowheader', { name: 'order_refunded' }).count())
      .toBe(0);
    await screenshot(page, 'catalog');
    await expectAccessible(page, 'the catalog');

    // The segment goes from its page, once its dialog is confirmed, naming what goes with it.
    await open(page, '#/segments/refunders', 'Refunders');
    await page.getByRole('button', { name: 'Delete segment' }).click();
    const deleteSegment = page.getByRole('dialog', { name: 'Delete segment Refunders?' });
    await expect
      .poll(() => deleteSegment.textContent())
      .toContain('history of entries and exits and its webhooks not yet delivered are deleted');
    await expectAccessible(page, 'the dialog deleting a segment');
    await deleteSegment.getByRole('button', { name: 'Delete segment refunders' }).click();
    await page.getByRole('heading', { level: 1, name: 'Segments' }).waitFor();
    const gone = await apiGet(
      '/v1/tenants/acme/segments/refunders/definition?workspace_id=eu',
      suite.served.tokens.tenant,
    );
    expect(gone.status).toBe(404);
    // The builder offers what rules can compare, as the API reads them: a metric no longer
    // collected whose values are kept is among them, said so.
    await open(page, '#/segments/new', 'New segment');
    await page.getByRole('button', { name: 'Add metric condition', exact: true }).click();
    const options = page.getByLabel('Metric of condition 1').locator('option');
    await expect
      .poll(() => options.allTextContents())
      .toContain('refund_total: no longer collected, values kept');
    await open(page, '#/catalog', 'Catalog');

    // At 360 px the page scrolls down, never sideways: wide tables scroll in their own box.
    await page.setViewportSize({ width: 360, height: 740 });
    expect(await pageWidth(page)).toBeLessThanOrEqual(360);
    await page.context().close();
    // Five accessibility scans and three dialogs: about 20 s on a quiet machine.
  }, 60_000);

  it('shows a workspace token no write control', async () => {
    const page = await signedIn(suite.served.tokens.workspace, 'dark');
    await open(page, '#/catalog', 'Catalog');
    await page
      .getByRole('region', { name: 'Event types' })
      .getByRole('rowheader', { name: 'page_viewed' })
      .waitFor();
    expect(await page.getByRole('button', { name: /Delete|Register|Create/ }).count()).toBe(0);
    expect(await page.locator('main form').count()).toBe(0);
    await expectAccessible(page, 'the catalog of a workspace token, in dark mode');
    await page.context().close();
  });
  it('reads the event types a page at a time, with a Show more for the next page', async () => {
    const everyName = (
      (await (
        await apiGet('/v1/tenants/acme/event-types?limit=500', suite.served.tokens.tenant)
      ).json()) as {
        event_types: { event_name: string }[];
      }
    ).event_types.map((type) => type.event_name);
    expect(everyName.length).toBeGreaterThan(3);
    const page = await signedIn(suite.served.tokens.tenant);
    // Pages of 3 rather than the console's 100, so that the seeded types fill more than one.
    const pagesAsked: (string | null)[] = [];
    await page.route(
      (url) =>
        url.pathname === '/v1/tenants/acme/event-types' && url.searchParams.get('limit') === '100',
      (route) => {
        const url = new URL(route.request().url());
        url.searchParams.set('limit', '3');
        pagesAsked.push(url.searchParams.get('cursor'));
        return route.continue({ url: url.toString() });
      },
    );
    await open(page, '#/catalog', 'Catalog');
    const types = page.getByRole('region', { name: 'Event types' });
    const shown = () => types.getByRole('rowheader').allTextContents();
    await expect.poll(shown).toEqual(everyName.slice(0, 3));
    // A metric may read any event type, not only those of the page shown.
    await expect
      .poll(() => page.getByLabel('Event', { exact: true }).locator('option').allTextContents())
      .toEqual(everyName);
    await expectAccessible(page, 'the catalog with more event types to show');

    const more = types.getByRole('button', { name: 'Show more event types' });
    while ((await shown()).length < everyName.length) {
      const before = (await shown()).length;
      await more.click();
      await expect.poll(async () => (await shown()).length).toBeGreaterThan(before);
    }
    expect(await shown()).toEqual(everyName);
    await expect.poll(() => more.count()).toBe(0);
    expect(pagesAsked[0]).toBeNull();
    expect(pagesAsked.slice(1).every((cursor) => typeof cursor === 'string')).toBe(true);
    await page.context().close();
  });
});

describe('the profiles page (issue 31, item 6)', () => {
  it('lists the people of the workspace, masked as the customer table, by segment and with chosen metric columns (issue 38, item 3)', async () => {
    const put = async (path: string, body: unknown) => {
      const answer = await fetch(`${suite.served.url}${path}`, {
        method: 'PUT',
        headers: {
          authorization: `Bearer ${suite.served.tokens.tenant}`,
          'content-type': 'application/json',
        },
        body: JSON.stringify(body),
      });
      expect(answer.status, await answer.clone().text()).toBe(201);
    };
    await put('/v1/tenants/acme/metric-definitions', {
      metric_name: 'signups',
      event_name: 'signed_up',
      value_kind: 'count',
    });
    await sendEvents([
      event('signed_up', { identifiers: { email: 'grace.hopper@example.com' } }),
      event('page_viewed', { identifiers: { email: 'alan.turing@example.com' } }),
    ]);
    await put('/v1/tenants/acme/segments/signed', {
      workspace_id: 'eu',
      display_name: 'Signed up',
      predicate: { metric: 'signups', op: 'gte', value: 1 },
    });
    await suite.served.server.ingestNow();
    const summary = async (query = '') =>
      (
        (await (
          await apiGet(
            `/v1/tenants/acme/workspaces/eu/profiles/summary${query}`,
            suite.served.tokens.workspace,
          )
        ).json()) as { profiles: { profile_id: string; email: string | null }[] }
      ).profiles;
    const members = await summary('?segment_id=signed');
    expect(members.length).toBeGreaterThan(0);

    const page = await signedIn(suite.served.tokens.workspace);
    await open(page, '#/profiles', 'People');
    const people = page.getByRole('table', { name: /^Identifiers masked/ });
    const firstColumn = () => people.locator('tbody th').allTextContents();
    await expect
      .poll(firstColumn)
      .toEqual((await summary()).map((row) => row.profile_id).slice(0, 100));
    // The emails as the API masks them, never plainer.
    const emails = await people.locator('tbody tr td:nth-of-type(1)').allTextContents();
    expect(emails).toEqual((await summary()).slice(0, 100).map((row) => row.email ?? '—'));

    // Sorted by a count, highest first: the API's order (those without it last).
    await page.getByLabel('Sort by').selectOption('signups:desc');
    const bySignups = await summary('?sort_by=signups&order=desc');
    expect(bySignups.length).toBeGreaterThan(1);
    await expect.poll(firstColumn).toEqual(bySignups.map((row) => row.profile_id).slice(0, 100));
    await page.getByLabel('Sort by').selectOption('');
    await page.getByLabel('Segment').selectOption('signed');
    await expect.poll(firstColumn).toEqual(members.map((row) => row.profile_id));
    // The metric is a column unless unchecked.
    await expect.poll(() => people.getByRole('columnheader', { name: 'signups' }).count()).toBe(1);
    await page.getByRole('checkbox', { name: 'signups' }).uncheck();
    await expect.poll(() => people.getByRole('columnheader', { name: 'signups' }).count()).toBe(0);
    await expectAccessible(page, 'the people list');

    await people.getByRole('link', { name: members[0]?.profile_id }).click();
    await page
      .getByRole('heading', { level: 1, name: `Profile ${members[0]?.profile_id}` })
      .waitFor();
    await page.context().close();
  });

  it('finds a profile by email without putting it in the URL, and erases it after a dry run', async () => {
    await sendEvents([
      event('signed_up', { identifiers: { email: EMAIL, phone: '+44 20 7946 0000' } }),
      event('page_viewed', { identifiers: { email: EMAIL } }),
    ]);
    const page = await signedIn(suite.served.tokens.tenant);
    const visited: string[] = [];
    page.on('framenavigated', (frame) => visited.push(frame.url()));
    await open(page, '#/profiles', 'People');
    await expectAccessible(page, 'the profile lookup');

    await page.getByLabel('Email').fill('nobody@example.com');
    await page.getByRole('button', { name: 'Find' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('No profile in eu');

    await page.getByLabel('Email').fill(EMAIL);
    await page.getByRole('button', { name: 'Find' }).click();
    await page.getByRole('heading', { level: 1, name: /Profile p_/ }).waitFor();
    const profileId = /#\/profiles\/(p_[0-9a-f]{24})$/.exec(page.url())?.[1] as string;
    expect(profileId).toMatch(/^p_/);

    // Identifiers as the API answers them: plain for the environment's plaintext types, else masked.
    const view = (await (
      await apiGet(
        `/v1/tenants/acme/workspaces/eu/profiles/${profileId}`,
        suite.served.tokens.tenant,
      )
    ).json()) as { identifiers: { type: string; value: string | null; masked_value: string }[] };
    const shown = view.identifiers.map((identifier) => [
      identifier.type,
      identifier.value ?? identifier.masked_value,
    ]);
    expect(shown.map(([type]) => type).sort()).toEqual(['email', 'phone']);
    const rows = page.getByRole('table').first().locator('tbody tr');
    await expect
      .poll(async () =>
        (await rows.all()).length === 0
          ? []
          : Promise.all(
              (await rows.all()).map(async (row) => {
                const cells = await row.locator('td').allTextContents();
                return [cells[0], cells[2]];
              }),
            ),
      )
      .toEqual(shown);
    await expect.poll(() => page.getByText('event signed_up', { exact: true }).count()).toBe(1);
    // Each event of the history opens its properties (its identifiers left them at ingest).
    await page.getByText('event page_viewed', { exact: true }).click();
    await expect
      .poll(() => page.locator('details[open] pre').textContent())
      .toBe(JSON.stringify({}, null, 2));
    await screenshot(page, 'profile');
    await expectAccessible(page, 'a profile');

    await page.getByRole('button', { name: /Dry run/ }).click();
    const planned = page.getByLabel('What erasing would remove');
    await planned.waitFor();
    // Focus follows the dry run to the counts and the confirmation.
    expect(
      await page.evaluate(
        () =>
          (globalThis as unknown as { document: { activeElement: { textContent: string } | null } })
            .document.activeElement?.textContent ?? '',
      ),
    ).toContain('Erase profile');
    expect(await planned.locator('dt:has-text("Profiles") + dd').textContent()).toBe('1');
    expect(await planned.locator('dt:has-text("Events") + dd').textContent()).toBe('2');
    // The dry run erased nothing.
    const lookup = `/v1/tenants/acme/workspaces/eu/profiles/lookup?email=${encodeURIComponent(EMAIL)}`;
    expect((await apiGet(lookup, suite.served.tokens.tenant)).status).toBe(200);
    await screenshot(page, 'profile-erasure');
    await expectAccessible(page, 'the erasure confirmation');

    await page.getByRole('button', { name: `Erase profile ${profileId}` }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('it is gone');
    expect((await apiGet(lookup, suite.served.tokens.tenant)).status).toBe(404);

    // Neither the address bar nor any page of the history held the email.
    const history = await page.evaluate(
      () => (globalThis as unknown as { history: { length: number } }).history.length,
    );
    expect(history).toBeGreaterThan(1);
    for (const url of [...visited, page.url()]) {
      expect(url).not.toContain(EMAIL);
      expect(url).not.toContain(encodeURIComponent(EMAIL));
      expect(url).not.toContain('lovelace');
    }
    await page.goBack();
    expect(page.url()).not.toContain('lovelace');
    await page.context().close();
  });
});

describe('the operations page (issue 31, item 7)', () => {
  it('shows the operator the ingest backlog, quarantine, failed deliveries, rejections and erasures', async () => {
    // An erasure of the tenant's to find in the audit list.
    await sendEvents([event('signed_up', { identifiers: { email: 'grace@example.com' } })]);
    const found = await apiGet(
      '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=grace%40example.com',
      suite.served.tokens.tenant,
    );
    const { profile_id: erasedId } = (await found.json()) as { profile_id: string };
    const erased = await fetch(
      `${suite.served.url}/v1/tenants/acme/workspaces/eu/profiles/${erasedId}`,
      {
        method: 'DELETE',
        headers: { authorization: `Bearer ${suite.served.tokens.tenant}` },
      },
    );
    expect(erased.status).toBe(200);

    // A rejection: the type is deleted between the collector taking the event and ingest.
    const typePath = `${suite.served.url}/v1/tenants/acme/event-types/coupon_used`;
    const auth = {
      authorization: `Bearer ${suite.served.tokens.tenant}`,
      'content-type': 'application/json',
    };
    expect((await fetch(typePath, { method: 'PUT', headers: auth, body: '{}' })).status).toBe(201);
    const rejectedId = crypto.randomUUID();
    await sendEvents(
      [
        {
          ...event('coupon_used', { identifiers: { email: 'grace@example.com' } }),
          id: rejectedId,
        },
      ],
      async () => {
        const deleted = await fetch(typePath, {
          method: 'DELETE',
          headers: { authorization: auth.authorization },
        });
        expect(deleted.status).toBe(204);
      },
    );

    const page = await signedIn(suite.served.operator);
    expect(await page.getByRole('link', { name: 'Operations' }).count()).toBe(1);
    await open(page, '#/operations', 'Operations');
    const ingest = page.getByRole('region', { name: 'Ingest' });
    await expect
      .poll(() => ingest.locator('dt:has-text("Backlog") + dd').textContent())
      .toMatch(/^\d+ files, \d+ bytes$/);
    await expect
      .poll(() => ingest.locator('dt:has-text("Lag") + dd').textContent())
      .toMatch(/^[\d.]+ s$/);
    await expect
      .poll(() => ingest.locator('dt:has-text("State") + dd').textContent())
      .toBe('keeping up');
    await expect
      .poll(() => page.getByRole('region', { name: 'Quarantined parts' }).textContent())
      .toContain('Nothing quarantined.');
    await expect
      .poll(() => page.getByRole('region', { name: /failed deliveries/ }).textContent())
      .toContain('No failed delivery.');
    const rejections = page.getByRole('region', { name: 'Rejections in acme / eu' });
    await expect
      .poll(() => rejections.getByRole('row', { name: new RegExp(rejectedId) }).textContent())
      .toContain('coupon_used');
    const erasures = page.getByRole('region', { name: 'Erasures in acme' });
    // Purged when the store next rewrites its file: either may be true by now.
    await erasures.getByRole('rowheader', { name: erasedId }).waitFor();
    expect(
      await erasures
        .getByRole('row', { name: new RegExp(erasedId) })
        .locator('td')
        .last()
        .textContent(),
    ).toMatch(/^(not yet|\d{4}-\d\d-\d\dT[\d:.]+Z)$/);
    await expectAccessible(page, 'the operations page');
    await page.context().close();
  });

  it('puts a quarantined part back for ingest, whose event then reaches its profile', async () => {
    // Set aside as ingest sets a part aside (src/quarantine), written straight into the
    // quarantine: a file put in landing first would race the running ingest loop for it.
    const line = {
      received_at: new Date().toISOString(),
      source: 'server',
      collector_id: 'c1x0test',
      event: event('signed_up', { identifiers: { email: 'quarantined@example.com' } }),
    };
    const record: QuarantinedFile = {
      quarantine_id: 'q_20260101000000_0123456789ab',
      tenant_id: 'acme',
      workspace_id: 'eu',
      landing_path: join('tenant=acme', 'workspace=eu', 'c1x0test-1.ndjson'),
      lines: 1,
      bytes: JSON.stringify(line).length + 1,
      reason: 'the disk said no',
      quarantined_at: new Date().toISOString(),
    };
    const folder = quarantineDir(suite.served.dataDir);
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, `${record.quarantine_id}.ndjson`), `${JSON.stringify(line)}\n`);
    await writeFile(join(folder, `${record.quarantine_id}.json`), JSON.stringify(record));

    const page = await signedIn(suite.served.operator);
    await open(page, '#/operations', 'Operations');
    const quarantine = page.getByRole('region', { name: 'Quarantined parts' });
    const row = quarantine.getByRole('row', { name: new RegExp(record.quarantine_id) });
    await row.waitFor();
    expect(await row.textContent()).toContain('the disk said no');
    expect(await row.textContent()).toContain('acme / eu');
    await screenshot(page, 'operations');
    await expectAccessible(page, 'the operations page with a quarantined part');

    await quarantine
      .getByRole('button', { name: `Retry quarantined part ${record.quarantine_id}` })
      .click();
    await expect
      .poll(() => quarantine.getByRole('status').textContent())
      .toBe('Put back 1 file(s) for ingest.');
    await expect.poll(() => quarantine.textContent()).toContain('Nothing quarantined.');
    await suite.served.server.ingestNow();
    const lookup = await apiGet(
      '/v1/tenants/acme/workspaces/eu/profiles/lookup?email=quarantined%40example.com',
      suite.served.tokens.tenant,
    );
    expect(lookup.status).toBe(200);
    await page.context().close();
  });

  it('sends failed webhook deliveries again, one and then every one, from the outbox list', async () => {
    // Two deliveries as the sender leaves them after a day of refusals, which a test cannot wait
    // for. This server sends no webhooks, so a delivery queued again stays pending.
    const ids = ['msg_operations_retry_1', 'msg_operations_retry_2'];
    await suite.served.context.store.write(async (session) => {
      for (const id of ids)
        await session.runText(
          `INSERT INTO webhook_outbox (webhook_id, tenant_id, workspace_id, segment_id, profile_id,
             type, backfill, created_at, status, attempts, last_attempt_at, last_error)
           VALUES ($id, 'acme', 'eu', 'shoppers', 'p_000000000000000000000001', 'segment.entered',
             false, now()::TIMESTAMP, 'failed', 12, now()::TIMESTAMP, 'connection refused')`,
          { id },
        );
    });
    const outboxIds = async (status: string) =>
      (
        (await (
          await apiGet(`/v1/operator/webhooks?status=${status}`, suite.served.operator)
        ).json()) as {
          webhooks: { webhook_id: string }[];
        }
      ).webhooks
        .map((row) => row.webhook_id)
        .sort();
    expect(await outboxIds('failed')).toEqual(ids);

    const page = await signedIn(suite.served.operator);
    await open(page, '#/operations', 'Operations');
    const outbox = page.getByRole('region', { name: /failed deliveries/ });
    for (const id of ids) {
      const row = outbox.getByRole('row', { name: new RegExp(id) });
      await row.waitFor();
      expect(await row.textContent()).toContain('connection refused');
      expect(await row.textContent()).toContain('shoppers (segment.entered)');
    }
    await expectAccessible(page, 'the operations page with failed deliveries');

    await outbox.getByRole('button', { name: `Retry delivery ${ids[0]}` }).click();
    await expect
      .poll(() => outbox.getByRole('status').textContent())
      .toBe('Queued 1 delivery(ies) again.');
    await expect.poll(() => outboxIds('failed')).toEqual([ids[1]]);
    await expect
      .poll(() => outbox.getByRole('row', { name: new RegExp(ids[0] as string) }).count())
      .toBe(0);

    await outbox.getByRole('button', { name: 'Retry every failed delivery' }).click();
    // The status line reads the same as after the first retry: the rows tell when this one is done.
    await expect.poll(() => outboxIds('failed')).toEqual([]);
    expect(await outboxIds('pending')).toEqual(ids);
    await expect.poll(() => outbox.textContent()).toContain('No failed delivery.');
    expect(await outbox.getByRole('button', { name: /Retry/ }).count()).toBe(0);
    await page.context().close();
  });

  it('is neither listed nor shown to a tenant token', async () => {
    const page = await signedIn(suite.served.tokens.tenant);
    expect(await page.getByRole('link', { name: 'Operations' }).count()).toBe(0);
    await page.evaluate(() => {
      (globalThis as unknown as { location: { hash: string } }).location.hash = '#/operations';
    });
    // The hash falls through to the page that takes every path.
    await page.getByRole('heading', { level: 1, name: 'Overview' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Operations' }).count()).toBe(0);
    await page.context().close();
  });
});
