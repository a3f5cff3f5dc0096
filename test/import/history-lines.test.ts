import { describe, expect, it } from 'vitest';
import { HistoryLines } from '../../src/import/history-lines.js';

describe('history lines', () => {
  const catalog = {
    hasWorkspace: (tenant: string, workspace: string) => tenant === 'acme' && workspace === 'eu',
    hasEventType: (_tenant: string, name: string) => ['page', 'signed_up'].includes(name),
  };
  const now = Date.parse('2026-06-01T00:00:00.000Z');

  it('writes a landing line as the collector would, keeping its receipt time, source and collector', () => {
    const lines = new HistoryLines(
      'envelope',
      { tenantId: null, workspaceId: null },
      catalog,
      'd',
      now,
    );
    const event = {
      envelop_version: '1.0',
      id: 'e1',
      name: 'page',
      tenant_id: 'acme',
      workspace_id: 'eu',
      anon_id: 'cookie:v1',
      occured_at: '2020-01-01T00:00:00Z',
      properties: { path: '/' },
      extra: 'dropped, as the collector drops it',
    };
    const landed = lines.convert(
      JSON.stringify({
        received_at: '2020-01-01T00:00:01+00:00',
        source: 'browser',
        collector_id: 'c7',
        event,
      }),
      1,
    );
    expect(landed).toMatchObject({
      tenantId: 'acme',
      workspaceId: 'eu',
      receivedAt: '2020-01-01T00:00:01.000Z',
    });
    const { extra: _extra, ...kept } = event;
    expect(JSON.parse((landed as { text: string }).text)).toEqual({
      received_at: '2020-01-01T00:00:01.000Z',
      source: 'browser',
      collector_id: 'c7',
      event: kept,
    });
  });

  it('takes a bare envelope as a server event received when it happened', () => {
    const lines = new HistoryLines(
      'envelope',
      { tenantId: 'acme', workspaceId: null },
      catalog,
      'd',
      now,
    );
    const landed = lines.convert(
      JSON.stringify({
        envelop_version: '1.0',
        id: 'e2',
        name: 'signed_up',
        tenant_id: 'acme',
        workspace_id: 'eu',
        occured_at: '2019-05-05T05:05:05.000Z',
        properties: { identifiers: { email: 'a@b.c' } },
      }),
      1,
    );
    expect(JSON.parse((landed as { text: string }).text)).toMatchObject({
      received_at: '2019-05-05T05:05:05.000Z',
      source: 'server',
      collector_id: 'import',
    });
  });

  it('refuses a line of another tenant than --tenant, and a collector id it would have to escape', () => {
    const lines = new HistoryLines(
      'envelope',
      { tenantId: 'globex', workspaceId: null },
      catalog,
      'd',
      now,
    );
    const event = {
      envelop_version: '1.0',
      id: 'e',
      name: 'page',
      tenant_id: 'acme',
      workspace_id: 'eu',
      anon_id: 'cookie:v',
      occured_at: '2020-01-01T00:00:00Z',
    };
    expect(lines.convert(JSON.stringify(event), 1)).toMatchObject({ code: 'tenant_mismatch' });
    expect(
      lines.convert(
        JSON.stringify({
          received_at: '2020-01-01T00:00:00Z',
          source: 'server',
          collector_id: 'a","x":"',
          event,
        }),
        2,
      ),
    ).toMatchObject({ code: 'unparsable_line', path: 'collector_id' });
  });

  it('maps a Segment call without a messageId to the same id on every run, and keeps its timestamp', () => {
    const call = JSON.stringify({
      type: 'track',
      event: 'Signed Up',
      userId: 'u1',
      timestamp: '2021-02-03T04:05:06.000Z',
      sentAt: '2021-02-03T05:00:00.000Z',
    });
    const texts = [1, 2].map(() => {
      const lines = new HistoryLines(
        'segment',
        { tenantId: 'acme', workspaceId: 'eu' },
        catalog,
        'digest',
        now,
      );
      return JSON.parse((lines.convert(call, 7) as { text: string }).text) as {
        event: { id: string; occured_at: string };
      };
    });
    expect(texts[0]?.event.id).toBe(texts[1]?.event.id);
    expect(texts[0]?.event.occured_at).toBe('2021-02-03T04:05:06.000Z');
    const otherLine = new HistoryLines(
      'segment',
      { tenantId: 'acme', workspaceId: 'eu' },
      catalog,
      'digest',
      now,
    );
    expect(JSON.parse((otherLine.convert(call, 8) as { text: string }).text).event.id).not.toBe(
      texts[0]?.event.id,
    );
  });
});
