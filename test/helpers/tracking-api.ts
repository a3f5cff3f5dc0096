import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { TestEnv } from './context.js';
import { call } from './tenant.js';

/** Mints a collector token of one workspace of tenant `acme`: a Segment write key. */
export async function mintWriteKey(
  env: TestEnv,
  tenantToken: string,
  workspace = 'eu',
): Promise<string> {
  const response = await call(env.app, tenantToken, 'POST', '/v1/tenants/acme/tokens', {
    kind: 'collector',
    name: `segment ${workspace}`,
    workspace_id: workspace,
  });
  expect(response.statusCode, response.body).toBe(201);
  return response.json().token as string;
}

/** The header Segment's libraries send: the write key as username, an empty password. */
export function basicAuth(writeKey: string, password = ''): string {
  return `Basic ${Buffer.from(`${writeKey}:${password}`).toString('base64')}`;
}

/** `user_id` is no built-in identifier type: a tenant declares it to have `userId` count. */
export async function declareUserId(env: TestEnv, tenantToken: string): Promise<void> {
  const response = await call(
    env.app,
    tenantToken,
    'PUT',
    '/v1/tenants/acme/identifier-types/user_id',
    { tier: 'strong' },
  );
  expect(response.statusCode, response.body).toBeLessThan(300);
}

/** Registers the event types of Segment's non-track calls for tenant `acme`. */
export async function registerTrackingCallTypes(env: TestEnv, tenantToken: string): Promise<void> {
  for (const name of ['identify', 'page', 'screen', 'alias', 'group']) {
    await call(env.app, tenantToken, 'PUT', `/v1/tenants/acme/event-types/${name}`, {});
  }
}

/** A POST of a JSON body to a Tracking API endpoint, with the write key as Basic auth. */
export function postTrackingApi(
  env: TestEnv,
  path: string,
  body: unknown,
  writeKey: string | null,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return env.app.inject({
    method: 'POST',
    url: path,
    headers: {
      'content-type': 'application/json',
      ...(writeKey === null ? {} : { authorization: basicAuth(writeKey) }),
      ...headers,
    },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

export interface LandedEvent {
  envelop_version: string;
  id: string;
  name: string;
  tenant_id: string;
  workspace_id: string;
  anon_id?: string;
  occured_at: string;
  properties: Record<string, unknown>;
}

/** A landing line (design §2), as the collector wrote it. */
export interface LandedLine {
  received_at: string;
  source: string;
  intake?: string;
  collector_id: string;
  event: LandedEvent;
}

/** Every line in the collector's landing files so far (open and sealed), in file order. */
export async function landedLines(env: TestEnv): Promise<LandedLine[]> {
  const root = env.context.dataDir.landingDir;
  const files = (await readdir(root, { recursive: true, withFileTypes: true }))
    .filter((entry) => entry.isFile() && /\.ndjson(\.open)?$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  const lines: LandedLine[] = [];
  for (const file of files) {
    for (const line of (await readFile(file, 'utf8')).split('\n')) {
      if (line !== '') lines.push(JSON.parse(line) as LandedLine);
    }
  }
  return lines;
}

/** Every envelope in the collector's landing files so far (open and sealed), in file order. */
export async function landedEvents(env: TestEnv): Promise<LandedEvent[]> {
  return (await landedLines(env)).map((line) => line.event);
}
