import { describe, expect, it } from 'vitest';
import { streamReadiness } from '../../src/shards/owner-readiness.js';
import type { StreamBacklogReading } from '../../src/shards/stream-backlog.js';

const now = new Date('2026-03-01T12:00:00.000Z');
const ago = (ms: number) => new Date(now.getTime() - ms);

function reading(overrides: Partial<StreamBacklogReading> = {}): StreamBacklogReading {
  return {
    readAt: ago(2000),
    tenants: [
      { tenantId: 'quiet', pending: 0, oldestAt: null },
      { tenantId: 'recent', pending: 4, oldestAt: ago(3000) },
      { tenantId: 'old', pending: 10, oldestAt: ago(45_000) },
    ],
    failingSince: null,
    ...overrides,
  };
}

describe('streamReadiness: when an owner is behind its stream', () => {
  it('sums the backlog, lists the tenants with one oldest first, and keeps up under the threshold', () => {
    const figures = streamReadiness({
      reading: reading(),
      loopFailingMs: null,
      maxLagMs: 60_000,
      now,
    });
    expect(figures).toEqual({
      pending: 14,
      lag_seconds: 45,
      read_at: '2026-03-01T11:59:58.000Z',
      tenants: [
        { tenant_id: 'old', pending: 10, lag_seconds: 45 },
        { tenant_id: 'recent', pending: 4, lag_seconds: 3 },
      ],
      behind: null,
    });
  });

  it.each([
    [
      'the oldest event is older than the threshold',
      { reading: reading(), loopFailingMs: null, maxLagMs: 30_000 },
      'the oldest event of its stream backlog is 45 s old, more than bus_ready_max_lag_ms (30000 ms)',
    ],
    [
      'the batches have failed for longer than the threshold',
      { reading: reading({ tenants: [] }), loopFailingMs: 61_500, maxLagMs: 60_000 },
      'its ingest batches have failed for 61 s, more than bus_ready_max_lag_ms (60000 ms)',
    ],
    [
      'the backlog has been unreadable for longer than the threshold',
      {
        reading: reading({ tenants: [], failingSince: ago(61_000) }),
        loopFailingMs: null,
        maxLagMs: 60_000,
      },
      'its stream backlog could not be read for more than bus_ready_max_lag_ms (60000 ms)',
    ],
  ])('is behind when %s', (_case, inputs, why) => {
    expect(streamReadiness({ ...inputs, now }).behind).toBe(why);
  });

  it.each<[string, { loopFailingMs?: number; failingSince?: Date }]>([
    ['batches failing for less than the threshold', { loopFailingMs: 59_000 }],
    ['a reading failing for less than the threshold', { failingSince: ago(59_000) }],
  ])('keeps up with %s', (_case, fault) => {
    const figures = streamReadiness({
      reading: reading({ tenants: [], failingSince: fault.failingSince ?? null }),
      loopFailingMs: fault.loopFailingMs ?? null,
      maxLagMs: 60_000,
      now,
    });
    expect(figures.behind).toBeNull();
  });

  it('counts a backlog whose oldest message is gone from the stream as pending, with no age', () => {
    const figures = streamReadiness({
      reading: reading({ tenants: [{ tenantId: 'gone', pending: 3, oldestAt: null }] }),
      loopFailingMs: null,
      maxLagMs: 1000,
      now,
    });
    expect(figures).toMatchObject({ pending: 3, lag_seconds: 0, behind: null });
  });
});
