import { DEMO_TENANT } from '../../src/cli/demo-setup.js';

/** A browser page view of the demo tenant, padded so that files grow by a known amount. */
export const demoVisit = (id: string, paddingChars: number) => ({
  envelop_version: '1.0',
  id,
  name: 'page_viewed',
  tenant_id: DEMO_TENANT,
  workspace_id: 'brand-eu',
  anon_id: `cookie:${id}`,
  occured_at: '2026-03-01T10:00:00Z',
  properties: { path: `/products/${'x'.repeat(paddingChars)}` },
});

/**
 * Sends demo page views to a collector's browser batch endpoint and keeps what it answered: the
 * ids of every event acknowledged (202), and the refusals with their bodies.
 */
export class VisitSender {
  readonly acknowledged: string[] = [];
  readonly refusals: { status: number; body: unknown }[] = [];

  constructor(
    private readonly url: string,
    private readonly paddingChars: number,
  ) {}

  async send(ids: string[]): Promise<void> {
    const events = ids.map((id) => demoVisit(id, this.paddingChars));
    const response = await fetch(`${this.url}/v1/events/batch`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-tenant-id': DEMO_TENANT,
        'x-workspace-id': 'brand-eu',
      },
      body: JSON.stringify({ events }),
    });
    if (response.status === 202) this.acknowledged.push(...ids);
    else this.refusals.push({ status: response.status, body: await response.json() });
  }
}
