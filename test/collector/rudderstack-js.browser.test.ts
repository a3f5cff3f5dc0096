import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useConsoleSuite } from '../helpers/console.js';
import { openShop, type Shop, theOneProfile, visitThroughA503 } from '../helpers/site-library.js';

/** RudderStack's browser SDK v3 as a site bundles it from npm: the build with its plugins inside. */
const SDK = readFileSync(
  new URL(
    '../../node_modules/@rudderstack/analytics-js/dist/npm/modern/bundled/esm/index.mjs',
    import.meta.url,
  ),
);

const suite = useConsoleSuite();
let shop: Shop;

/**
 * The shop's page: the SDK loaded as its README says, with cds as both its config URL and its
 * data plane, batching on, and a consent manager's choices.
 */
function shopPage(writeKey: string): string {
  return `<!doctype html>
<html><head><title>Shop</title></head><body><h1>Shop</h1>
<script type="module">
import { RudderAnalytics } from '/rsa.mjs';
const analytics = new RudderAnalytics();
analytics.load(${JSON.stringify(writeKey)}, ${JSON.stringify(suite.served.url)}, {
  configUrl: ${JSON.stringify(suite.served.url)},
  polyfillIfRequired: false,
  queueOptions: { batch: { enabled: true, maxItems: 3, flushInterval: 1000 } },
  consentManagement: {
    enabled: true,
    provider: 'custom',
    allowedConsentIds: ['analytics'],
    deniedConsentIds: ['marketing'],
  },
});
analytics.page();
analytics.identify('u-7', { email: 'bea@shop.example', plan: 'gold' });
analytics.track('Product Viewed', { sku: 'sku-2', category: 'bags' });
</script></body></html>`;
}

beforeAll(async () => {
  shop = await openShop(suite, {
    page: shopPage,
    files: new Map([['/rsa.mjs', SDK]]),
    workspace: { consent_categories: ['analytics', 'marketing'] },
  });
}, 60_000);

afterAll(async () => {
  await shop?.close();
});

describe("a site keeps RudderStack's browser SDK v3, pointed at cds (issue 39, item 3)", () => {
  it('loads its source config from cds, sends page, identify and track in a batch that a 503 makes it retry, with consent, and talks to no other host', async () => {
    // The SDK waits 2 s before its first retry.
    const requested = await visitThroughA503(suite, shop, '/v1/batch');
    const hosts = new Set(requested.map((url) => new URL(url).origin));
    expect([...hosts].sort()).toEqual([shop.origin, suite.served.url].sort());
    expect(
      requested.some((url) => url.startsWith(`${suite.served.url}/sourceConfig/?`)),
      'its source config asked of cds',
    ).toBe(true);

    expect(await theOneProfile(suite)).toEqual({
      email: null,
      // Each call stored once, the retried batch included.
      events: ['identify', 'page', 'product_viewed'],
      identifierTypes: ['cookie'],
      // The consent manager's choices, from context.consentManagement.
      consent: [
        ['analytics', true],
        ['marketing', false],
      ],
    });
  }, 90_000);
});
