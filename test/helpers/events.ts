import { randomUUID } from 'node:crypto';
import type { LightMyRequestResponse } from 'fastify';
import type { TestEnv } from './context.js';
import { call } from './tenant.js';

export interface EventSpec {
  name?: string;
  id?: string;
  workspace?: string;
  tenant?: string;
  anon?: string;
  at?: string;
  identifiers?: Record<string, unknown>;
  properties?: Record<string, unknown>;
}

/** An envelope as a store's site or backend sends it. */
export function envelope(spec: EventSpec = {}): Record<string, unknown> {
  return {
    envelop_version: '1.0',
    id: spec.id ?? randomUUID(),
    name: spec.name ?? 'page_viewed',
    tenant_id: spec.tenant ?? 'acme',
    workspace_id: spec.workspace ?? 'eu',
    ...(spec.anon ? { anon_id: `cookie:${spec.anon}` } : {}),
    occured_at: spec.at ?? '2026-03-01T10:00:00.000Z',
    properties: {
      ...(spec.identifiers ? { identifiers: spec.identifiers } : {}),
      ...(spec.properties ?? {}),
    },
  };
}

export function sendServer(
  env: TestEnv,
  token: string,
  events: Record<string, unknown>[],
): Promise<LightMyRequestResponse> {
  return call(env.app, token, 'POST', '/v1/server/events/batch', { events });
}

export function sendBrowser(
  env: TestEnv,
  events: Record<string, unknown>[],
  scope: { tenant?: string; workspace?: string } = {},
): Promise<LightMyRequestResponse> {
  return env.app.inject({
    method: 'POST',
    url: '/v1/events/batch',
    headers: { 'x-tenant-id': scope.tenant ?? 'acme', 'x-workspace-id': scope.workspace ?? 'eu' },
    payload: { events },
  });
}

/** Registers the event types most tests use. */
export async function registerEventTypes(
  env: TestEnv,
  tenantToken: string,
  tenant = 'acme',
): Promise<void> {
  for (const name of ['page_viewed', 'product_viewed', 'signed_up']) {
    await call(env.app, tenantToken, 'PUT', `/v1/tenants/${tenant}/event-types/${name}`, {});
  }
  await call(env.app, tenantToken, 'PUT', `/v1/tenants/${tenant}/event-types/order_completed`, {
    dedup_entity: 'order',
    dedup_key_paths: ['properties.order_id'],
  });
}
