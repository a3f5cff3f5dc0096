import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useConsoleSuite } from '../helpers/console.js';
import { openShop, type Shop, theOneProfile, visitThroughA503 } from '../helpers/site-library.js';

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
let shop: Shop;

beforeAll(async () => {
  // The shop: a page on an origin of its own, with the snippet, identify and track.
  shop = await openShop(suite, {
    page: (writeKey) => `<!doctype html>
<html><head><title>Shop</title><script>${segmentSnippet(suite.served.url, writeKey)}</script></head>
<body><h1>Shop</h1><script>
analytics.identify('u-42', { email: 'ann@shop.example', plan: 'gold' });
analytics.track('product_viewed', { sku: 'sku-1', category: 'shoes' });
</script></body></html>`,
  });
}, 60_000);

afterAll(async () => {
  await shop?.close();
});

describe('a site keeps its analytics.js snippet, with only its host changed (issue 39)', () => {
  it('loads the library and its settings from cds, sends page, identify and track in a batch that a 503 makes it retry, and talks to no other host', async () => {
    const requested = await visitThroughA503(suite, shop, '/v1/b');
    const hosts = new Set(requested.map((url) => new URL(url).origin));
    expect([...hosts].sort()).toEqual([shop.origin, suite.served.url].sort());
    expect(requested).toContain(
      `${suite.served.url}/analytics.js/v1/${shop.writeKey}/analytics.min.js`,
    );
    expect(requested).toContain(`${suite.served.url}/v1/projects/${shop.writeKey}/settings`);

    expect(await theOneProfile(suite)).toMatchObject({
      // Browser trust drops the email.
      email: null,
      // Each call stored once, the retried batch included.
      events: ['identify', 'page', 'product_viewed'],
      identifierTypes: ['cookie'],
    });
  }, 90_000);
});
