import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { AxeBuilder } from '@axe-core/playwright';
import {
  type Browser,
  type BrowserContextOptions,
  chromium,
  type Page,
  type Request,
} from 'playwright-core';
import { afterAll, beforeAll, expect } from 'vitest';
import { type RunningServer, startServer } from '../../src/cli/serve.js';
import type { Context } from '../../src/context.js';
import type { DataDir } from '../../src/store/data-dir.js';
import { operatorToken } from '../../src/tenancy/operator.js';
import type { TestEnvOptions } from './context.js';
import { openSeededEnv } from './seeded.js';
import type { Tokens } from './tenant.js';

const CHROMIUM = '/usr/bin/chromium';

export interface ConsoleServer {
  url: string;
  tokens: Tokens;
  /** The operator credential of the data dir (derived from its master key). */
  operator: string;
  /** The served data dir, for a test that sets up what only ingest makes (a quarantined part). */
  dataDir: DataDir;
  server: RunningServer;
  /** The served store, for a test to set up what no route makes (a delivery given up). */
  context: Context;
  close(): Promise<void>;
}

/**
 * A listening `cds serve` over a seeded data dir (tenant `acme` with workspaces `eu` and `us`,
 * tokens of every kind, the usual event types), with the console its build put in dist/console.
 */
export async function startConsoleServer(
  config: TestEnvOptions['config'] = {},
): Promise<ConsoleServer> {
  const { env, tokens } = await openSeededEnv({ config: { ...config, port: 0 } });
  // The test env's own app is not the one served: startServer builds `cds serve`'s.
  await env.app.close();
  const server = await startServer(env.context, { logRequests: false, ingest: true });
  return {
    url: server.url,
    tokens,
    operator: operatorToken(env.context.dataDir.masterKey),
    dataDir: env.context.dataDir,
    server,
    context: env.context,
    close: () => server.close(),
  };
}

/** The server and the browser a console test file shares, there once its `beforeAll` ran. */
export interface ConsoleSuite {
  served: ConsoleServer;
  browser: Browser;
  /** A page in a browser context of its own: no storage shared with the file's other pages. */
  newPage(options?: BrowserContextOptions): Promise<Page>;
}

/**
 * Starts one `cds serve` (over `config`, or what `config` resolves to) and one Chromium before
 * the file's tests, and closes both after them: what every console browser test file shares.
 * A file's own `beforeAll`, registered after this call, runs once both are up.
 */
export function useConsoleSuite(
  config: TestEnvOptions['config'] | (() => Promise<TestEnvOptions['config']>) = {},
): ConsoleSuite {
  const suite = {
    newPage: async (options?: BrowserContextOptions) =>
      (await suite.browser.newContext(options)).newPage(),
  } as ConsoleSuite;
  beforeAll(async () => {
    suite.served = await startConsoleServer(typeof config === 'function' ? await config() : config);
    suite.browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await suite.browser?.close();
    await suite.served?.close();
  });
  return suite;
}

/** What the tests read in a console page (the test files are typed without the DOM). */
export interface ConsoleGlobals {
  sessionStorage: { readonly length: number; key(index: number): string | null };
  localStorage: { readonly length: number };
  document: { cookie: string };
  location: { href: string };
}

/** The storage, cookies and address of the page, as the browser holds them. */
export function browserState(page: Page): Promise<{
  session: string[];
  localItems: number;
  cookies: string;
  url: string;
}> {
  return page.evaluate(() => {
    const globals = globalThis as unknown as ConsoleGlobals;
    const session: string[] = [];
    for (let index = 0; index < globals.sessionStorage.length; index += 1)
      session.push(globals.sessionStorage.key(index) ?? '');
    return {
      session,
      localItems: globals.localStorage.length,
      cookies: globals.document.cookie,
      url: globals.location.href,
    };
  });
}

/** Debian's Chromium, headless; never a browser playwright would download. */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM))
    throw new Error(
      `${CHROMIUM} is missing: run scripts/system-packages.sh (apt-get install chromium)`,
    );
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** Opens the console and signs in with `token`, as a user pastes it. */
export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/console/`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Console' }).waitFor();
}

/** Where `npm run screenshots` (CDS_SCREENSHOTS=1) puts the pictures docs/console.md shows. */
const SCREENSHOTS = 'docs/console';

/**
 * Saves the page as docs/console/<name>.png when the run is `npm run screenshots`, and does
 * nothing otherwise, so the tests are what produces the documentation's pictures.
 */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.CDS_SCREENSHOTS !== '1') return;
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** How wide the page lays out, scrolled sideways included: at most the window's width when it fits. */
export function pageWidth(page: Page): Promise<number> {
  return page.evaluate(
    () =>
      (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document
        .documentElement.scrollWidth,
  );
}

/** No serious or critical axe-core violation on the page as it is now (issue 31, item 9). */
export async function expectAccessible(page: Page, what: string): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const grave = results.violations
    .filter((violation) => violation.impact === 'serious' || violation.impact === 'critical')
    .map((violation) => `${violation.id}: ${violation.help} (${violation.nodes.length} nodes)`);
  expect(grave, `axe on ${what}`).toEqual([]);
}

/** What went wrong on a page while it was watched, each as one line naming it. */
export interface PageFaults {
  /** Requests answered 400 or above, failed on the network, console errors and thrown errors. */
  readonly lines: string[];
  /**
   * Resolves once the page has no request in flight but its live event stream (held open on
   * purpose) and none has started or ended for `quietMs`: what the page asks on its own, such as
   * a preview it starts a moment after it is shown, has been asked and answered.
   */
  settled(quietMs: number): Promise<void>;
}

/** The console's live event stream: a request that stays open while its page is shown. */
const HELD_OPEN = /\/events\/stream(\?|$)/;

/**
 * Watches `page` from now on: every request the browser makes (its own, such as the site icon,
 * included) that fails or is answered 400 or above, every console error and every uncaught error.
 * A request the page gives up itself (a stream it closes on leaving) is no fault.
 */
export function watchFaults(page: Page): PageFaults {
  const lines: string[] = [];
  const inFlight = new Set<Request>();
  let lastChange = performance.now();
  page.on('request', (request) => {
    if (!HELD_OPEN.test(new URL(request.url()).pathname)) inFlight.add(request);
    lastChange = performance.now();
  });
  const ended = (request: Request) => {
    inFlight.delete(request);
    lastChange = performance.now();
  };
  page.on('requestfinished', ended);
  page.on('requestfailed', ended);
  page.on('response', (response) => {
    if (response.status() >= 400)
      lines.push(`${response.status()} ${response.request().method()} ${response.url()}`);
  });
  page.on('requestfailed', (request) => {
    const failure = request.failure()?.errorText ?? 'failed';
    if (failure !== 'net::ERR_ABORTED')
      lines.push(`${failure} ${request.method()} ${request.url()}`);
  });
  page.on('console', (message) => {
    if (message.type() === 'error') lines.push(`console error: ${message.text()}`);
  });
  page.on('pageerror', (error) => lines.push(`uncaught: ${error.message}`));
  return {
    lines,
    async settled(quietMs) {
      for (;;) {
        const quietFor = performance.now() - lastChange;
        if (inFlight.size === 0 && quietFor >= quietMs) return;
        await page.waitForTimeout(Math.max(25, quietMs - quietFor));
      }
    },
  };
}
