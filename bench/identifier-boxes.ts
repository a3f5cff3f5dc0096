import { boxingKeyFor, busPublicKey, newBusKeyId } from '../src/bus/identifier-box.js';
import type { EventCatalog, IntakeScope } from '../src/collector/accept.js';
import { checkBatch } from '../src/collector/batch-intake.js';
import { checkTrackingBatch } from '../src/collector/tracking-api/intake.js';

/**
 * `npx tsx bench/identifier-boxes.ts`: a collector's CPU per event for a 500-event server batch
 * and a 500-message Segment batch, each identifier set boxed to the bus key or not (issue 36).
 * Runs alternate, so a machine's load weighs on both alike; prints the median of each.
 */
const EVENTS = 500;
const ROUNDS = 40;
const anything: EventCatalog = { hasWorkspace: () => true, hasEventType: () => true };
const keyId = newBusKeyId();
const box = boxingKeyFor({
  key_id: keyId,
  public_key: busPublicKey(Buffer.alloc(32, 1), keyId),
  created_at: '',
});

const native = JSON.stringify({
  events: Array.from({ length: EVENTS }, (_, index) => ({
    envelop_version: '1.0',
    id: `00000000-0000-4000-8000-${String(index).padStart(12, '0')}`,
    name: 'order_completed',
    tenant_id: 'acme',
    workspace_id: 'eu',
    occured_at: '2026-03-01T10:00:00.000Z',
    properties: {
      order_id: `o-${index}`,
      total: 129.5,
      currency: 'INR',
      identifiers: {
        email: `person${index}@example.com`,
        phone: `+9198765${String(index).padStart(5, '0')}`,
      },
    },
  })),
});
const segment = JSON.stringify({
  batch: Array.from({ length: EVENTS }, (_, index) => ({
    type: 'track',
    event: 'Order Completed',
    userId: `u-${index}`,
    messageId: `m-${index}`,
    timestamp: '2026-03-01T10:00:00.000Z',
    context: { traits: { email: `person${index}@example.com` } },
    properties: { order_id: `o-${index}`, total: 129.5 },
  })),
});

function microsPerEvent(run: () => void): number {
  const start = performance.now();
  run();
  return ((performance.now() - start) * 1000) / EVENTS;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? 0;

const cases: Record<string, (boxed: boolean) => () => void> = {
  'server batch': (boxed) => {
    const scope: IntakeScope = {
      source: 'server',
      tenantId: 'acme',
      workspaceId: null,
      ...(boxed ? { box } : {}),
    };
    return () => {
      checkBatch(
        {
          body: native,
          scope,
          receivedAt: '2026-03-01T10:00:01.000Z',
          collectorId: 'c',
          form: 'messages',
        },
        anything,
      );
    };
  },
  'Segment batch': (boxed) => {
    const scope = {
      source: 'server' as const,
      intake: 'segment_api' as const,
      tenantId: 'acme',
      workspaceId: 'eu',
      ...(boxed ? { box } : {}),
    };
    return () => {
      checkTrackingBatch(
        {
          body: segment,
          scope,
          receivedAt: '2026-03-01T10:00:01.000Z',
          collectorId: 'c',
          form: 'messages',
        },
        anything,
      );
    };
  },
};

for (const [name, make] of Object.entries(cases)) {
  const plain = make(false);
  const boxed = make(true);
  for (let warm = 0; warm < 10; warm += 1) {
    plain();
    boxed();
  }
  const times = { plain: [] as number[], boxed: [] as number[] };
  for (let round = 0; round < ROUNDS; round += 1) {
    times.plain.push(microsPerEvent(plain));
    times.boxed.push(microsPerEvent(boxed));
  }
  const [p, b] = [median(times.plain), median(times.boxed)];
  console.log(
    `${name}: ${p.toFixed(1)} µs/event plain, ${b.toFixed(1)} boxed (+${(b - p).toFixed(1)})`,
  );
}
