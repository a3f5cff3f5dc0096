import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import type { ConsoleSuite } from './console.js';
import { mountSmallDisk } from './small-disk.js';

/** A tenant token's call to the served API, with its JSON answer parsed. */
export async function tenantCall(
  suite: ConsoleSuite,
  method: string,
  path: string,
  body?: unknown,
) {
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

/** A shop's site on an origin of its own, allowed to send to workspace eu with its write key. */
export interface Shop {
  origin: string;
  writeKey: string;
  close(): Promise<void>;
}

/**
 * Serves `page(writeKey)` at `/` and `files` at their paths, allows the shop's origin on workspace
 * eu (with `workspace`'s other settings), registers the `page` and `identify` event types the
 * libraries send, and mints the shop's browser write key.
 */
export async function openShop(
  suite: ConsoleSuite,
  options: {
    page: (writeKey: string) => string;
    files?: ReadonlyMap<string, Buffer>;
    workspace?: Record<string, unknown>;
  },
): Promise<Shop> {
  let writeKey = '';
  const server = createServer((request, response) => {
    const file = options.files?.get(request.url ?? '');
    if (request.url === '/') {
      response
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(options.page(writeKey));
    } else if (file) {
      response.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(file);
    } else {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const workspace = await tenantCall(suite, 'PUT', '/v1/tenants/acme/workspaces/eu', {
    ...options.workspace,
    allowed_origins: [origin],
  });
  expect(workspace.status, JSON.stringify(workspace.body)).toBe(200);
  for (const name of ['page', 'identify']) {
    const registered = await tenantCall(suite, 'PUT', `/v1/tenants/acme/event-types/${name}`, {});
    expect(registered.status).toBeLessThan(300);
  }
  const minted = await tenantCall(suite, 'POST', '/v1/tenants/acme/tokens', {
    kind: 'write_key',
    workspace_id: 'eu',
    name: 'shop.example',
  });
  expect(minted.status, JSON.stringify(minted.body)).toBe(201);
  writeKey = minted.body.token;
  return {
    origin,
    writeKey,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** What workspace eu's one profile holds once ingested: the site's calls, at browser trust. */
export async function theOneProfile(suite: ConsoleSuite): Promise<{
  email: string | null;
  events: string[];
  identifierTypes: string[];
  consent: [string, boolean][];
}> {
  const people = await tenantCall(suite, 'GET', '/v1/tenants/acme/workspaces/eu/profiles/summary');
  expect(people.body.profiles).toHaveLength(1);
  const [profile] = people.body.profiles as { profile_id: string; email: string | null }[];
  const base = `/v1/tenants/acme/workspaces/eu/profiles/${profile?.profile_id}`;
  const history = await tenantCall(suite, 'GET', `${base}/history`);
  const view = await tenantCall(suite, 'GET', base);
  return {
    email: profile?.email ?? null,
    events: (history.body.entries as { kind: string; event_name: string }[])
      .filter((entry) => entry.kind === 'event')
      .map((entry) => entry.event_name)
      .sort(),
    identifierTypes: (view.body.identifiers as { type: string }[]).map(({ type }) => type),
    consent: (view.body.consent as { category: string; granted: boolean }[]).map(
      ({ category, granted }) => [category, granted],
    ),
  };
}

/**
 * Opens the shop's page while cds's landing disk is full, so cds answers the library's first post
 * to `endpoint` 503 as any failing disk would have it; frees the disk and waits for the library's
 * retry to be taken, and ingests it. Resolves with the URLs the page asked for, the page closed.
 */
export async function visitThroughA503(
  suite: ConsoleSuite,
  shop: Shop,
  endpoint: string,
): Promise<string[]> {
  const disk = mountSmallDisk(1, suite.served.dataDir.landingDir);
  try {
    disk.fillLeaving(0);
    const page = await suite.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    const answered = (status: number) =>
      page.waitForResponse(
        (response) => response.url().endsWith(endpoint) && response.status() === status,
        { timeout: 30_000 },
      );
    const refused = answered(503);
    await page.goto(`${shop.origin}/`);
    await refused;
    disk.freeBallast();
    await answered(200);
    await page.context().close();
    // Ingested while the small disk holds what it took: unmounting it takes its files with it.
    await suite.served.server.ingestNow();
    return requested;
  } finally {
    disk.unmount();
  }
}
