import { describe, expect, it } from 'vitest';
import {
  browserState,
  expectAccessible,
  screenshot,
  signIn,
  useConsoleSuite,
} from '../helpers/console.js';

const suite = useConsoleSuite();

describe('the console (issue 31)', () => {
  it('is served under a Content-Security-Policy that forbids inline script, precompressed and cached by name', async () => {
    const index = await fetch(`${suite.served.url}/console/`, {
      headers: { 'accept-encoding': 'br' },
    });
    expect(index.status).toBe(200);
    const csp = index.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(index.headers.get('cache-control')).toBe('no-cache');
    const html = await index.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const script = /src="(assets\/main-[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const asset = await fetch(`${suite.served.url}/console/${script}`, {
      headers: { 'accept-encoding': 'gzip' },
    });
    expect(asset.headers.get('content-encoding')).toBe('gzip');
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect((await fetch(`${suite.served.url}/console/../package.json`)).status).toBe(404);
  });

  it('signs in with a tenant token, keeping it in sessionStorage only', async () => {
    const page = await suite.newPage();
    await signIn(page, suite.served.url, suite.served.tokens.tenant);
    await expect.poll(() => page.getByText('tenant token').count()).toBeGreaterThan(0);
    expect(
      await page.getByText('Can write').locator('xpath=following-sibling::dd[1]').textContent(),
    ).toBe('yes');
    const stored = await browserState(page);
    expect(stored.session).toEqual(['cds.console.token']);
    expect(stored.localItems).toBe(0);
    expect(stored.cookies).toBe('');
    expect(stored.url).not.toContain(suite.served.tokens.tenant);
    // The tenant's workspaces to switch between.
    await expect
      .poll(() => page.getByLabel('Workspace').locator('option').allTextContents())
      .toEqual(['eu', 'us']);
    await screenshot(page, 'overview');
    await expectAccessible(page, 'the overview of a tenant token');
    await page.context().close();
  });

  it('says a read-only token is read-only, and refuses a revoked one', async () => {
    const page = await suite.newPage();
    await signIn(page, suite.served.url, suite.served.tokens.workspace);
    await expect.poll(() => page.getByText(/this token is read-only/).count()).toBe(1);
    await expect.poll(() => page.getByText('acme / eu').count()).toBe(1);
    await page.context().close();

    const refused = await suite.newPage();
    await refused.goto(`${suite.served.url}/console/`);
    await screenshot(refused, 'sign-in');
    await expectAccessible(refused, 'the sign-in page');
    await refused.getByLabel('Token').fill(suite.served.tokens.revoked);
    await refused.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => refused.getByRole('alert').textContent()).toMatch(/not valid/);
    expect((await browserState(refused)).session).toEqual([]);
    await refused.context().close();
  });
});
