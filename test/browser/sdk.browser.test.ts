import { existsSync } from 'node:fs';
import { createServer, get, type IncomingHttpHeaders, type Server } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ChildServer, runJson, startCli } from '../helpers/cli.js';
import { CollectorDoor, close, listen } from '../helpers/collector-door.js';
import { callServer } from '../helpers/http.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { waitUntil } from '../helpers/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const LISTENING = /cds listening on (http:\/\/\S+)/;

/** What the tests call in the page (the test files are typed without the DOM). */
interface PageGlobals {
  cds: {
    init(options: unknown): void;
    track(name: string, properties: unknown): string;
    flush(): Promise<void>;
    anonymousId(): string;
  };
  /** The options the page starts cds with, or would with `later`. */
  shopOptions: unknown;
  localStorage: {
    readonly length: number;
    key(index: number): string | null;
    getItem(key: string): string | null;
    setItem(key: string, value: string): void;
    removeItem(key: string): void;
  };
}

/** The localStorage key of one part of a tab's queue, as the SDK names it. */
const queueKey = (tab: string, part: 'queue' | 'ack') =>
  `cds_queue:${JSON.stringify(['acme', 'eu', tab, part])}`;

/**
 * A shop's page: it loads cds.js from the collector and starts it with options in its hash
 * (`later`: the page leaves starting it to the test).
 */
function shopPage(scriptUrl: string, collectorUrl: string): string {
  return `<!doctype html><html><head><title>shop</title>
<script src="${scriptUrl}/v1/cds.js"></script>
<script>
  var extra = location.hash ? JSON.parse(decodeURIComponent(location.hash.slice(1))) : {};
  var shopOptions = Object.assign({ url: '${collectorUrl}', tenant: 'acme', workspace: 'eu' }, extra);
  if (!extra.later) cds.init(shopOptions);
</script></head><body>shoes</body></html>`;
}

/** The ids each tab of the shop holds in localStorage, oldest first, one list a tab. */
function queuedIds(page: Page): Promise<string[][]> {
  return page.evaluate(() => {
    const storage = (globalThis as unknown as PageGlobals).localStorage;
    const lists: string[][] = [];
    for (let index = 0; index < storage.length; index += 1) {
      const key = storage.key(index) ?? '';
      if (!key.startsWith('cds_queue:[')) continue;
      const [tenant, workspace, , part] = JSON.parse(key.slice('cds_queue:'.length));
      if (tenant !== 'acme' || workspace !== 'eu' || part !== 'queue') continue;
      const held = JSON.parse(storage.getItem(key) ?? '[]') as { event: { id: string } }[];
      lists.push(held.map((item) => item.event.id));
    }
    return lists;
  });
}

/**
 * The ids of the events in each batch `page` sends by fetch, and how many beacons it sent
 * (Chromium does not show a beacon's body).
 */
function recordSends(page: Page): { batches: string[][]; beacons: number } {
  const sent = { batches: [] as string[][], beacons: 0 };
  page.on('request', (request) => {
    if (request.method() !== 'POST' || !request.url().includes('/v1/events/batch')) return;
    if (request.resourceType() === 'ping') {
      sent.beacons += 1;
      return;
    }
    const body = JSON.parse(request.postData() ?? '{}') as { events?: { id: string }[] };
    sent.batches.push((body.events ?? []).map((event) => event.id));
  });
  return sent;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the browser SDK in a real Chromium, on a page of another origin', () => {
  let server: ChildServer;
  let door: CollectorDoor;
  let site: Server;
  let siteOrigin: string;
  let browser: Browser;
  let context: BrowserContext;
  let tenantToken: string;
  let collectorToken: string;

  const api = (method: string, path: string, token: string, body?: unknown) =>
    callServer(server, token, method, path, body);

  /** The ids of the events stored under the profile that holds `email`, oldest first. */
  const storedEventIds = async (email: string): Promise<string[]> => {
    const lookup = await api(
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/lookup?email=${encodeURIComponent(email)}`,
      tenantToken,
    );
    if (lookup.status !== 200) return [];
    const history = await api(
      'GET',
      `/v1/tenants/acme/workspaces/eu/profiles/${lookup.body.profile_id}/history?limit=500`,
      tenantToken,
    );
    return (history.body.entries as { kind: string; event_id?: string }[])
      .filter((entry) => entry.kind === 'event')
      .map((entry) => entry.event_id ?? '')
      .reverse();
  };

  const shopUrl = (options: Record<string, unknown>, origin = siteOrigin) =>
    `${origin}/#${encodeURIComponent(JSON.stringify(options))}`;

  const openShop = async (options: Record<string, unknown> = {}, origin = siteOrigin) => {
    const page = await context.newPage();
    await page.goto(shopUrl(options, origin));
    return page;
  };

  /**
   * Leaves the keys of `count` tabs that closed without a word: two events each under their own
   * keys, their acks long stale. The ids of their events.
   */
  const leaveClosedTabs = async (count: number): Promise<string[]> => {
    const starter = await openShop({ later: true });
    const visitor = await anonymousId(starter);
    const closedTabs = Array.from({ length: count }, (_, tab) => ({
      tab: crypto.randomUUID(),
      events: [1, 2].map((event) => ({
        envelop_version: '1.0',
        id: crypto.randomUUID(),
        name: 'page_viewed',
        tenant_id: 'acme',
        workspace_id: 'eu',
        anon_id: `cookie:${visitor}`,
        occured_at: new Date().toISOString(),
        properties: { path: `/closed-${tab}-${event}` },
      })),
    }));
    const leftKeys = closedTabs.flatMap(({ tab, events }) => [
      [queueKey(tab, 'queue'), JSON.stringify(events.map((event) => ({ event })))],
      [queueKey(tab, 'ack'), String(Date.now() - 60_000)],
    ]);
    await starter.evaluate((entries) => {
      const storage = (globalThis as unknown as PageGlobals).localStorage;
      for (const [key, value] of entries) storage.setItem(key ?? '', value ?? '');
    }, leftKeys);
    await starter.close();
    return closedTabs.flatMap(({ events }) => events.map((event) => event.id));
  };

  const track = (page: Page, name: string, properties: Record<string, unknown> = {}) =>
    page.evaluate(
      ([eventName, eventProperties]) =>
        (globalThis as unknown as PageGlobals).cds.track(eventName as string, eventProperties),
      [name, properties] as const,
    );

  const flush = (page: Page) =>
    page.evaluate(() => (globalThis as unknown as PageGlobals).cds.flush());

  const anonymousId = (page: Page) =>
    page.evaluate(() => (globalThis as unknown as PageGlobals).cds.anonymousId());

  /** A server event that says who the visitor of this cookie is: the way a login is told. */
  const identify = async (visitor: string, email: string) => {
    const response = await fetch(`${door.url}/v1/server/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${collectorToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        envelop_version: '1.0',
        id: crypto.randomUUID(),
        name: 'signed_up',
        tenant_id: 'acme',
        workspace_id: 'eu',
        anon_id: `cookie:${visitor}`,
        occured_at: new Date().toISOString(),
        properties: { identifiers: { email } },
      }),
    });
    expect(response.status).toBe(202);
  };

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(
        `${CHROMIUM} is missing: run bash scripts/system-packages.sh (npm test runs it first)`,
      );
    }
    const dir = tempDir();
    const created = await runJson<{ tenant_token: { token: string } }>([
      '--data-dir',
      dir,
      'tenants',
      'create',
      'acme',
      '-w',
      'eu',
    ]);
    tenantToken = created.tenant_token.token;
    server = await startCli(
      ['--data-dir', dir, 'serve', '--port', '0', '--quiet'],
      LISTENING,
      20_000,
      { CDS_LANDING_MAX_AGE_MS: '200', CDS_INGEST_INTERVAL_MS: '200' },
    );
    door = new CollectorDoor(server.url);
    await door.open();
    site = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(shopPage(server.url, door.url));
    });
    siteOrigin = `http://127.0.0.1:${await listen(site)}`;

    for (const name of ['page_viewed', 'product_viewed', 'signed_up']) {
      expect(
        (await api('PUT', `/v1/tenants/acme/event-types/${name}`, tenantToken, {})).status,
      ).toBe(201);
    }
    expect(
      (
        await api('PUT', '/v1/tenants/acme/workspaces/eu', tenantToken, {
          allowed_origins: [siteOrigin],
        })
      ).status,
    ).toBe(200);
    const issued = await api('POST', '/v1/tenants/acme/tokens', tenantToken, {
      kind: 'collector',
      name: 'shop backend',
      workspace_id: 'eu',
    });
    collectorToken = String(issued.body.token);

    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    context = await browser.newContext();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    if (site) await close(site);
    await door?.shut();
    await server?.stop();
  });

  it('is served with a JavaScript type, an ETag, a cache lifetime, gzipped under 5 KB', async () => {
    // node:http, not fetch, which would inflate the body before its size can be read.
    const gzipped = await new Promise<{
      status: number;
      headers: IncomingHttpHeaders;
      body: Buffer;
    }>((resolve, reject) => {
      get(`${server.url}/v1/cds.js`, { headers: { 'accept-encoding': 'gzip' } }, (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: Buffer.concat(chunks),
          }),
        );
      }).on('error', reject);
    });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(gzipped.headers['cache-control']).toBe('public, max-age=3600');
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    const compressed = gzipped.body;
    expect(compressed.length).toBeLessThanOrEqual(5 * 1024);
    const etag = String(gzipped.headers.etag);
    expect(etag).toMatch(/^"[\w-]+"$/);

    const plain = await fetch(`${server.url}/v1/cds.js`, {
      headers: { 'accept-encoding': 'identity' },
    });
    const text = await plain.text();
    expect(text).toBe(gunzipSync(compressed).toString());
    expect(text).toContain('cds_anon_id');
    expect(plain.headers.get('content-encoding')).toBeNull();
    expect(plain.headers.get('etag')).toBe(etag);

    const unchanged = await fetch(`${server.url}/v1/cds.js`, {
      headers: { 'if-none-match': etag },
    });
    expect(unchanged.status).toBe(304);
    expect(await unchanged.text()).toBe('');
  });

  it('sends tracked events, stored under the visitor cookie, which a server event ties to an email', async () => {
    const page = await openShop({ flushInterval: 100 });
    const ids = [
      await track(page, 'Page Viewed', { path: '/shoes' }),
      await track(page, 'product_viewed', { sku: 'shoe-1' }),
    ];
    await flush(page);
    const visitor = await anonymousId(page);
    expect(visitor).toMatch(/^[0-9a-f-]{36}$/);
    const cookie = (await context.cookies(siteOrigin)).find(
      (entry) => entry.name === 'cds_anon_id',
    );
    expect(cookie).toMatchObject({ value: visitor, sameSite: 'Lax', path: '/' });
    const yearFromNow = Date.now() / 1000 + 365 * 24 * 3600;
    expect(Math.abs((cookie?.expires ?? 0) - yearFromNow)).toBeLessThan(60);
    expect(
      await page.evaluate(() =>
        (globalThis as unknown as PageGlobals).localStorage.getItem('cds_anon_id'),
      ),
    ).toBe(visitor);

    await identify(visitor, 'ana@example.com');
    await waitUntil(
      async () => {
        const stored = await storedEventIds('ana@example.com');
        return ids.every((id) => stored.includes(id));
      },
      'the tracked events under the profile of the cookie',
      10_000,
    );
    // Each a simple request: the SDK never asks for a preflight.
    expect(door.exchanges.filter((exchange) => exchange.method === 'OPTIONS')).toEqual([]);
    const posts = door.exchanges.filter((exchange) => exchange.body.includes(ids[0] ?? '-'));
    expect(posts[0]).toMatchObject({ method: 'POST', origin: siteOrigin, status: 202 });
    expect(posts[0]?.url).toBe('/v1/events/batch?tenant_id=acme&workspace_id=eu');
    await page.close();
  });

  it('sends what is left when the page goes away, in a beacon with no preflight', async () => {
    const page = await openShop({ flushInterval: 60_000 });
    const id = await track(page, 'page_viewed', { path: '/leaving' });
    await page.goto('about:blank');
    await waitUntil(
      () =>
        door.exchanges.some((exchange) => exchange.body.includes(id) && exchange.status === 202),
      'the beacon',
      5_000,
    );
    expect(door.exchanges.filter((exchange) => exchange.method === 'OPTIONS')).toEqual([]);
    await waitUntil(
      async () => (await storedEventIds('ana@example.com')).includes(id),
      'the beaconed event to be stored',
      10_000,
    );
    // `pagehide` and `visibilitychange` both told the page it was leaving: one beacon went.
    expect(door.exchanges.filter((exchange) => exchange.body.includes(id))).toHaveLength(1);
    await page.close();
  });

  it('is refused on an origin the workspace does not allow, naming it', async () => {
    const otherOrigin = siteOrigin.replace('127.0.0.1', 'localhost');
    const page = await openShop({ flushInterval: 60_000 }, otherOrigin);
    const id = await track(page, 'page_viewed', { path: '/elsewhere' });
    await flush(page);
    const refused = door.exchanges.find((exchange) => exchange.body.includes(id));
    expect(refused).toMatchObject({ origin: otherOrigin, status: 403 });
    expect(JSON.parse(refused?.answer ?? '{}')).toMatchObject({
      error: { code: 'origin_not_allowed', details: { origin: otherOrigin } },
    });
    await page.close();
  });

  it('keeps events while the collector is down and delivers them after a reload, each once', async () => {
    await door.shut();
    const page = await openShop({ flushInterval: 50 });
    const ids = [
      await track(page, 'page_viewed', { path: '/offline-1' }),
      await track(page, 'page_viewed', { path: '/offline-2' }),
      await track(page, 'product_viewed', { sku: 'offline' }),
    ];
    await flush(page);
    // In the tab's own queue, behind what earlier pages of the site left unacknowledged (a
    // beacon's events), if this tab reclaimed them already.
    expect((await queuedIds(page)).map((held) => held.slice(-3))).toContainEqual(ids);

    await door.open();
    await page.reload();
    await waitUntil(
      async () => {
        const stored = await storedEventIds('ana@example.com');
        return ids.every((id) => stored.includes(id));
      },
      'the queued events after the reload',
      15_000,
    );
    await waitUntil(
      async () => (await queuedIds(page)).flat().length === 0,
      'the queue to be emptied',
      5_000,
    );
    const stored = await storedEventIds('ana@example.com');
    for (const id of ids) expect(stored.filter((storedId) => storedId === id)).toHaveLength(1);
    // The leaving page's one beacon and the next page's resend: two deliveries at most.
    for (const id of ids) {
      const deliveries = door.exchanges.filter((exchange) => exchange.body.includes(id));
      expect(deliveries.length).toBeGreaterThanOrEqual(1);
      expect(deliveries.length).toBeLessThanOrEqual(2);
    }
    await page.close();
  });

  it('takes calls made before init, and wrong calls, without throwing into the page', async () => {
    const page = await context.newPage();
    const errors: Error[] = [];
    page.on('pageerror', (error) => errors.push(error));
    const warnings: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'warning') warnings.push(message.text());
    });
    await page.goto(shopUrl({ later: true, flushInterval: 50 }));

    const early = await track(page, 'page_viewed', { path: '/before-init' });
    expect(early).toMatch(/^[0-9a-f-]{36}$/);
    await flush(page);
    const circular = await page.evaluate(() => {
      const { cds, shopOptions } = globalThis as unknown as PageGlobals;
      cds.init(undefined);
      cds.init(shopOptions);
      cds.init(shopOptions);
      const properties: Record<string, unknown> = {};
      properties.itself = properties;
      return cds.track('page_viewed', properties);
    });
    expect(circular).toBe('');
    await waitUntil(
      async () => (await storedEventIds('ana@example.com')).includes(early),
      'the event tracked before init, once init came',
      10_000,
    );
    expect(errors).toEqual([]);
    expect(warnings).toEqual([
      expect.stringContaining('cds.init needs { url, tenant, workspace }'),
      expect.stringContaining('cds.init was called already'),
      expect.stringContaining('circular'),
    ]);
    await page.close();
  });

  it("never sends one item from two open tabs, and sends a closed tab's items from one", async () => {
    // No other page of the site is left to take a closed tab's items.
    await Promise.all(context.pages().map((page) => page.close()));
    const closedIds = await leaveClosedTabs(3);

    // Two tabs start together, so both find the closed tabs' items at once.
    const tabs = await Promise.all([context.newPage(), context.newPage()]);
    const sends = tabs.map(recordSends);
    await Promise.all(tabs.map((tab) => tab.goto(shopUrl({ flushInterval: 60_000 }))));
    /** The tabs that sent `id`, once for each time. */
    const sentBy = (id: string) =>
      sends.flatMap(({ batches }, tab) =>
        batches.flat().flatMap((sent) => (sent === id ? [tab] : [])),
      );
    await waitUntil(
      () => closedIds.every((id) => sentBy(id).length > 0),
      "the closed tabs' items, reclaimed and sent",
      15_000,
    );
    // Answered and forgotten: a tab goes on sending while its queue holds anything, so what the
    // tabs track next would go along.
    await waitUntil(
      async () => (await queuedIds(tabs[0] as Page)).flat().length === 0,
      "the closed tabs' items, answered",
      10_000,
    );

    const held = await Promise.all(
      tabs.map(async (tab, index) => [
        await track(tab, 'page_viewed', { path: `/tab-${index}-1` }),
        await track(tab, 'page_viewed', { path: `/tab-${index}-2` }),
      ]),
    );
    // Longer than an ack may age (10 s) and a look for stale ones (every 3 s) with a claim
    // (1 s): a live tab's items are not taken by the other.
    await sleep(15_000);
    expect(held.flat().flatMap(sentBy)).toEqual([]);
    await Promise.all(tabs.map(flush));

    held.forEach((ids, tab) => {
      for (const id of ids) expect(sentBy(id)).toEqual([tab]);
    });
    for (const id of closedIds) expect(sentBy(id)).toHaveLength(1);
    // Nothing left either tab in a beacon, whose events the counts above could not see.
    expect(sends.map(({ beacons }) => beacons)).toEqual([0, 0]);
    const ids = closedIds.concat(held.flat());
    await waitUntil(
      async () => {
        const stored = await storedEventIds('ana@example.com');
        return ids.every((id) => stored.includes(id));
      },
      'the events of all tabs to be stored',
      10_000,
    );
    const stored = await storedEventIds('ana@example.com');
    for (const id of ids) expect(stored.filter((storedId) => storedId === id)).toHaveLength(1);
    await Promise.all(tabs.map((tab) => tab.close()));
  }, 60_000);

  it('keeps its queue in memory where localStorage is blocked or full, and sends it', async () => {
    const errors: Error[] = [];
    const blocked = await context.newPage();
    blocked.on('pageerror', (error) => errors.push(error));
    await blocked.addInitScript(() =>
      Object.defineProperty(globalThis, 'localStorage', {
        get() {
          throw new Error('localStorage is blocked here');
        },
      }),
    );
    await blocked.goto(shopUrl({ flushInterval: 60_000 }));
    const fromBlocked = await track(blocked, 'page_viewed', { path: '/blocked' });
    await flush(blocked);

    const full = await openShop({ later: true, flushInterval: 60_000 });
    full.on('pageerror', (error) => errors.push(error));
    await full.evaluate(() => {
      const { localStorage, cds, shopOptions } = globalThis as unknown as PageGlobals;
      for (let size = 1 << 20, index = 0; size >= 1; index += 1) {
        try {
          localStorage.setItem(`filler-${index}`, 'x'.repeat(size));
        } catch {
          size >>= 1;
        }
      }
      cds.init(shopOptions);
    });
    const fromFull = await track(full, 'page_viewed', { path: '/full' });
    const kept = await full.evaluate(() => {
      const { localStorage } = globalThis as unknown as PageGlobals;
      return Array.from({ length: localStorage.length }, (_, index) => {
        const key = localStorage.key(index) ?? '';
        return key.startsWith('filler-') ? '' : (localStorage.getItem(key) ?? '');
      }).join('');
    });
    expect(kept).not.toContain(fromFull);
    await flush(full);
    await full.evaluate(() => {
      const { localStorage } = globalThis as unknown as PageGlobals;
      for (const key of Array.from({ length: localStorage.length }, (_, index) =>
        localStorage.key(index),
      )) {
        if (key?.startsWith('filler-')) localStorage.removeItem(key);
      }
    });

    for (const id of [fromBlocked, fromFull]) {
      expect(door.exchanges.filter((exchange) => exchange.body.includes(id))).toMatchObject([
        { status: 202 },
      ]);
    }
    expect(errors).toEqual([]);
    await Promise.all([blocked.close(), full.close()]);
  });

  it("takes a closed tab's items without Web Locks too (an http page), sending them once", async () => {
    await Promise.all(context.pages().map((page) => page.close()));
    const closedIds = await leaveClosedTabs(2);
    const page = await context.newPage();
    // As on an http page or in a browser before Web Locks: the SDK claims in two steps instead.
    await page.addInitScript(() => {
      const { Navigator } = globalThis as unknown as { Navigator: { prototype: object } };
      delete (Navigator.prototype as { locks?: unknown }).locks;
    });
    const sends = recordSends(page);
    await page.goto(shopUrl({ flushInterval: 60_000 }));
    expect(
      await page.evaluate(
        () => 'locks' in (globalThis as unknown as { navigator: object }).navigator,
      ),
    ).toBe(false);
    await waitUntil(
      () => closedIds.every((id) => sends.batches.flat().includes(id)),
      "the closed tabs' items, claimed in two steps and sent",
      10_000,
    );
    expect(sends.batches.flat().sort()).toEqual([...closedIds].sort());
    await page.close();
  });
});
