import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus series (docs/decisions.md "Metrics"). Counters and histograms count
 * what happens in this process; the gauges of stored state (outbox, erasures, quarantine, landing
 * backlog) are read from the data dir when `/metrics` is scraped (see api/routes/prometheus.ts).
 */
export const prometheusRegistry = new Registry();
collectDefaultMetrics({ register: prometheusRegistry, prefix: 'cds_' });

const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export const httpRequestDuration = new Histogram({
  name: 'cds_http_request_duration_seconds',
  help: 'HTTP requests by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: DURATION_BUCKETS,
  registers: [prometheusRegistry],
});

export const collectorEvents = new Counter({
  name: 'cds_collector_events_total',
  help: 'Events the collector accepted, or refused by reason (one per refused event of a batch)',
  labelNames: ['outcome', 'reason'] as const,
  registers: [prometheusRegistry],
});

export const collectorRequestsRefused = new Counter({
  name: 'cds_collector_requests_refused_total',
  help: 'Collector requests refused whole, by error code (authentication, origin, limits, body)',
  labelNames: ['reason'] as const,
  registers: [prometheusRegistry],
});

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
  buckets: DURATION_BUCKETS,
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

/** Counts what one collector request accepted and refused, event by event. */
export function countIntake(accepted: number, refused: readonly { code: string }[]): void {
  if (accepted > 0) collectorEvents.inc({ outcome: 'accepted', reason: '' }, accepted);
  for (const refusal of refused) collectorEvents.inc({ outcome: 'refused', reason: refusal.code });
}
