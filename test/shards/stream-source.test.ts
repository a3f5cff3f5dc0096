import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { busMessagesOf } from '../../src/collector/bus-messages.js';
import { envelopeSchema, landingLineText } from '../../src/collector/envelope.js';
import { ingestBatch } from '../../src/ingest/batch.js';
import { listenForAdvances, type WorkspaceAdvance } from '../../src/ingest/live-feed.js';
import { streamSource } from '../../src/shards/stream-source.js';
import type { TestEnv } from '../helpers/context.js';
import { envelope } from '../helpers/events.js';
import { openSeededEnv } from '../helpers/seeded.js';
import { call, type Tokens } from '../helpers/tenant.js';

let env: TestEnv;
let tokens: Tokens;

beforeEach(async () => {
  ({ env, tokens } = await openSeededEnv());
});
afterEach(() => env.close());

/** A landing line as a collector publishes it on the bus, at stream sequence `seq`. */
function busEvent(seq: number, event: Record<string, unknown>) {
  const line = JSON.stringify({
    received_at: '2026-03-01T11:00:00.000Z',
    source: 'server',
    collector_id: 'cbus',
    event,
  });
  return {
    tenantId: 'acme',
    workspaceId: 'eu',
    seq,
    index: 0,
    endsMessage: true,
    data: Buffer.from(`${line}\n`),
  };
}

describe('a cluster owner’s batch and the live view', () => {
  it('records the lines and tells the streams once the batch commits', async () => {
    const heard: WorkspaceAdvance[] = [];
    const stop = listenForAdvances(env.context.store, (advance) => heard.push(advance));
    const stored = envelope({ identifiers: { email: 'bus.person@example.com' } });
    const unidentified = envelope({ identifiers: { loyalty_id: 'L-1' } });
    await ingestBatch(env.context, streamSource(env.context), [
      busEvent(1, stored),
      busEvent(2, unidentified),
    ]);
    stop();
    expect(heard).toEqual([
      { tenant_id: 'acme', workspace_id: 'eu', last_seq: expect.any(Number) },
    ]);

    const page = await call(
      env.app,
      tokens.workspace,
      'GET',
      '/v1/tenants/acme/workspaces/eu/events',
    );
    expect(
      page
        .json()
        .items.map((item: { event_id: string; outcome: string }) => [item.event_id, item.outcome]),
    ).toEqual([
      [unidentified.id, 'rejected'],
      [stored.id, 'stored'],
    ]);
    expect(page.body).not.toContain('bus.person@example.com');
  });

  it('names a Segment tracking API line’s source as the landing path does: its message is the line', async () => {
    const event = envelopeSchema.parse(envelope({ anon: 'visitor-bus' }));
    const text = landingLineText(
      '2026-03-01T11:00:00.000Z',
      'server',
      'cbus',
      event,
      'segment_api',
    );
    const [message] = busMessagesOf([
      {
        tenantId: 'acme',
        workspaceId: 'eu',
        receivedAt: '2026-03-01T11:00:00.000Z',
        eventId: event.id,
        text,
      },
    ]);
    const data = Buffer.from(message?.data ?? '');
    await ingestBatch(env.context, streamSource(env.context), [
      { tenantId: 'acme', workspaceId: 'eu', seq: 1, index: 0, endsMessage: true, data },
    ]);
    const page = await call(
      env.app,
      tokens.workspace,
      'GET',
      '/v1/tenants/acme/workspaces/eu/events',
    );
    expect(page.json().items).toMatchObject([
      { event_id: event.id, source: 'segment_api', outcome: 'stored' },
    ]);
  });
});
