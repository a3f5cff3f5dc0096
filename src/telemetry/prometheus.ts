import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import { DURATION_BUCKETS, RequestDurations } from './request-durations.js';

/**
 * The process's Prometheus series (docs/decisions.md "Prometheus metrics"). Counters and histograms count
 * what happens in this process; the gauges of stored state (outbox, erasures, quarantine, landing
 * backlog) are read from the data dir when `/metrics` is scraped (see api/routes/prometheus.ts).
 * What every request counts (its duration, the collector's events and refusals) is tallied in
 * plain numbers and read into the series at scrape time, so that counting costs a request next
 * to nothing.
 */
export const prometheusRegistry = new Registry();
collectDefaultMetrics({ register: prometheusRegistry, prefix: 'cds_' });

const requestDurations = new RequestDurations(
  'cds_http_request_duration_seconds',
  'HTTP requests by method, route template and status',
);

/** Counts one answered HTTP request under its route's template (`/v1/tenants/:tenant/…`). */
export function recordRequestDuration(
  method: string,
  route: string,
  status: number,
  seconds: number,
): void {
  requestDurations.record(method, route, status, seconds);
}

/** Tallies of the collector, read by the counters below when scraped. */
const collectorTally = {
  acceptedEvents: 0,
  refusedEvents: new Map<string, number>(),
  refusedRequests: new Map<string, number>(),
};

function countInto(tally: Map<string, number>, reason: string, count = 1): void {
  tally.set(reason, (tally.get(reason) ?? 0) + count);
}

new Counter({
  name: 'cds_collector_events_total',
  help: 'Events the collector accepted, or refused by reason (one per refused event of a batch)',
  labelNames: ['outcome', 'reason'] as const,
  registers: [prometheusRegistry],
  collect() {
    this.reset();
    if (collectorTally.acceptedEvents > 0) {
      this.inc({ outcome: 'accepted', reason: '' }, collectorTally.acceptedEvents);
    }
    for (const [reason, count] of collectorTally.refusedEvents) {
      this.inc({ outcome: 'refused', reason }, count);
    }
  },
});

new Counter({
  name: 'cds_collector_requests_refused_total',
  help: 'Collector requests refused whole, by error code (authentication, origin, limits, body)',
  labelNames: ['reason'] as const,
  registers: [prometheusRegistry],
  collect() {
    this.reset();
    for (const [reason, count] of collectorTally.refusedRequests) this.inc({ reason }, count);
  },
});

/** Counts what one collector request accepted and refused, event by event. */
export function countIntake(accepted: number, refused: readonly { code: string }[]): void {
  collectorTally.acceptedEvents += accepted;
  for (const refusal of refused) countInto(collectorTally.refusedEvents, refusal.code);
}

/** Counts a collector request refused whole, by its error code (or its status without one). */
export function countRefusedRequest(reason: string): void {
  countInto(collectorTally.refusedRequests, reason);
}

/** Everything `/metrics` answers, in Prometheus' text format (`prometheusContentType`). */
export async function prometheusText(): Promise<string> {
  return `${await prometheusRegistry.metrics()}\n${requestDurations.text()}\n`;
}

export const prometheusContentType = prometheusRegistry.contentType;

export const ingestBatches = new Counter({
  name: 'cds_ingest_batches_total',
  help: 'Ingest batches, committed or failed (a failed one is rolled back and tried again)',
  labelNames: ['outcome'] as const,
  registers: [prometheusRegistry],
});

export const ingestEvents = new Counter({
  name: 'cds_ingest_events_total',
  help: 'Landing lines ingested, by outcome: stored, duplicate, rejected, unparsable',
  labelNames: ['outcome'] as const,
  registers: [prometheusRegistry],
});

export const ingestBatchDuration = new Histogram({
  name: 'cds_ingest_batch_duration_seconds',
  help: 'Time from reading a batch of landing files to its commit',
  buckets: [...DURATION_BUCKETS],
  registers: [prometheusRegistry],
});

export const ingestLag = new Gauge({
  name: 'cds_ingest_lag_seconds',
  help: 'At the last commit, the age of the oldest landing file the batch took',
  registers: [prometheusRegistry],
});

export const quarantinedParts = new Counter({
  name: 'cds_ingest_quarantined_parts_total',
  help: 'Parts of landing files set aside because every batch holding them failed',
  registers: [prometheusRegistry],
});

export const segmentEvaluations = new Counter({
  name: 'cds_segment_evaluations_total',
  help: 'Segment evaluations: over the profiles a batch touched, over a whole workspace (backfill), or failed (the segment is marked with its error)',
  labelNames: ['outcome'] as const,
  registers: [prometheusRegistry],
});

export const webhookAttempts = new Counter({
  name: 'cds_webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome: delivered, or the failure cause',
  labelNames: ['outcome'] as const,
  registers: [prometheusRegistry],
});

export const webhookDeliveryLatency = new Histogram({
  name: 'cds_webhook_delivery_latency_seconds',
  help: 'From a webhook queued in the outbox to its delivery',
  buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
  registers: [prometheusRegistry],
});

export const erasurePurges = new Counter({
  name: 'cds_erasure_purges_total',
  help: 'Rewrites of the database file that purge erased rows, by outcome',
  labelNames: ['outcome'] as const,
  registers: [prometheusRegistry],
});
