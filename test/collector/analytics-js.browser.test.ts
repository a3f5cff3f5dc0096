import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useConsoleSuite } from '../helpers/console.js';
import { mountSmallDisk, type SmallDisk } from '../helpers/small-disk.js';

/**
 * Segment's analytics.js snippet, version 5.2.0, as Segment's "copy snippet" gives it
 * (@segment/snippet 5.2.1, `min({ apiKey, page: true })`): a site's page keeps it as it is but
 * for the host of the script it loads, here `CDS`.
 */
function segmentSnippet(cdsOrigin: string, writeKey: string): string {
  return `!function(){var i="analytics",analytics=window[i]=window[i]||[];if(!analytics.initialize)if(analytics.invoked)window.console&&console.error&&console.error("Segment snippet included twice.");else{analytics.invoked=!0;analytics.methods=["trackSubmit","trackClick","trackLink","trackForm","pageview","identify","reset","group","track","ready","alias","debug","page","screen","once","off","on","addSourceMiddleware","addIntegrationMiddleware","setAnonymousId","addDestinationMiddleware","register"];analytics.factory=function(e){return function(){if(window[i].initialized)return window[i][e].apply(window[i],arguments);var n=Array.prototype.slice.call(arguments);if(["track","screen","alias","group","page","identify"].indexOf(e)>-1){var c=document.querySelector("link[rel='canonical']");n.push({__t:"bpc",c:c&&c.getAttribute("href")||void 0,p:location.pathname,u:location.href,s:location.search,t:document.title,r:document.referrer})}n.unshift(e);analytics.push(n);return analytics}};for(var n=0;n<analytics.methods.length;n++){var key=analytics.methods[n];analytics[key]=analytics.factory(key)}analytics.load=function(key,n){var t=document.createElement("script");t.type="text/javascript";t.async=!0;t.setAttribute("data-global-segment-analytics-key",i);t.src="${cdsOrigin}/analytics.js/v1/" + key + "/analytics.min.js";var r=document.getElementsByTagName("script")[0];r.parentNode.insertBefore(t,r);analytics._loadOptions=n};analytics._writeKey="${writeKey}";;analytics.SNIPPET_VERSION="5.2.0";
analytics.load("${writeKey}");
analytics.page();
}}();`;
}

const suite = useConsoleSuite();
let shop: Server;
let shopOrigin: string;
let writeKey: string;

async function callApi(method: string, path: string, body?: unknown) {
  const response = await fetch(`${suite.served.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${suite.served.tokens.tenant}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, body: text === '' ? null : JSON.parse(text) };
}

beforeAll(async () => {
  // The shop: a page on an origin of its own, with the snippet, identify and track.
  shop = createServer((request, response) => {
    if (request.url !== '/') {
      response.writeHead(404).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(`<!doctype html>
<html><head><title>Shop</title><script>${segmentSnippet(suite.served.url, writeKey)}</script></head>
<body><h1>Shop</h1><script>
analytics.identify('u-42', { email: 'ann@shop.example', plan: 'gold' });
analytics.track('product_viewed', { sku: 'sku-1', category: 'shoes' });
</script></body></html>`);
  });
  await new Promise<void>((resolve) => shop.listen(0, '127.0.0.1', resolve));
  shopOrigin = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;

  const workspace = await callApi('PUT', '/v1/tenants/acme/workspaces/eu', {
    allowed_origins: [shopOrigin],
  });
  expect(workspace.status, JSON.stringify(workspace.body)).toBe(200);
  for (const name of ['page', 'identify']) {
    const registered = await callApi('PUT', `/v1/tenants/acme/event-types/${name}`, {});
    expect(registered.status).toBeLessThan(300);
  }
  const minted = await callApi('POST', '/v1/tenants/acme/tokens', {
    kind: 'write_key',
    workspace_id: 'eu',
    name: 'shop.example',
  });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  writeKey = minted.body.token;
}, 60_000);

afterAll(async () => {
  await new Promise((resolve) => shop?.close(resolve));
});

describe('a site keeps its analytics.js snippet, with only its host changed (issue 39)', () => {
  it('loads the library and its settings from cds, sends page, identify and track in a batch that a 503 makes it retry, and talks to no other host', async () => {
    // The landing disk full: cds answers the first batch 503, as any failing disk would have it.
    const disk: SmallDisk = mountSmallDisk(1, suite.served.dataDir.landingDir);
    try {
      disk.fillLeaving(0);
      const page = await suite.newPage();
      const requested: string[] = [];
      page.on('request', (request) => requested.push(request.url()));
      const refused = page.waitForResponse(
        (response) => response.url().endsWith('/v1/b') && response.status() === 503,
        { timeout: 30_000 },
      );
      await page.goto(`${shopOrigin}/`);
      await refused;
      disk.freeBallast();
      await page.waitForResponse(
        (response) => response.url().endsWith('/v1/b') && response.status() === 200,
        { timeout: 30_000 },
      );

      const hosts = new Set(requested.map((url) => new URL(url).origin));
      expect([...hosts].sort()).toEqual([shopOrigin, suite.served.url].sort());
      expect(requested).toContain(
        `${suite.served.url}/analytics.js/v1/${writeKey}/analytics.min.js`,
      );
      expect(requested).toContain(`${suite.served.url}/v1/projects/${writeKey}/settings`);
      await page.context().close();

      await suite.served.server.ingestNow();
      const people = await callApi('GET', '/v1/tenants/acme/workspaces/eu/profiles/summary');
      expect(people.body.profiles).toHaveLength(1);
      const [profile] = people.body.profiles as { profile_id: string; email: string | null }[];
      expect(profile?.email, 'browser trust drops the email').toBeNull();
      const history = await callApi(
        'GET',
        `/v1/tenants/acme/workspaces/eu/profiles/${profile?.profile_id}/history`,
      );
      const events = (history.body.entries as { kind: string; event_name: string }[])
        .filter((entry) => entry.kind === 'event')
        .map((entry) => entry.event_name)
        .sort();
      expect(events, 'each call stored once, the retried batch included').toEqual([
        'identify',
        'page',
        'product_viewed',
      ]);
      const identifiers = await callApi(
        'GET',
        `/v1/tenants/acme/workspaces/eu/profiles/${profile?.profile_id}`,
      );
      expect(
        (identifiers.body.identifiers as { type: string }[]).map((identifier) => identifier.type),
      ).toEqual(['cookie']);
    } finally {
      disk.unmount();
    }
  }, 90_000);
});
