import type * as PromClient from 'prom-client';
import { requirePackage } from '../require-package.js';
import { DURATION_BUCKETS, RequestDurations } from './request-durations.js';

/**
 * The process's Prometheus series (docs/decisions.md "Prometheus metrics"). Counters and histograms count
 * what happens in this process; the gauges of stored state (outbox, erasures, quarantine, landing
 * backlog) are read from the data dir when `/metrics` is scraped (see api/routes/prometheus.ts).
 * What every request counts (its duration, the collector's events and refusals) is tallied in
 * plain numbers and read into the series at scrape time, so that counting costs a request next
 * to nothing.
 */

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

/** Counts what one collector request accepted and refused, event by event. */
export function countIntake(accepted: number, refused: readonly { code: string }[]): void {
  collectorTally.acceptedEvents += accepted;
  for (const refusal of refused) countInto(collectorTally.refusedEvents, refusal.code);
}

/** Counts a collector request refused whole, by its error code (or its status without one). */
export function countRefusedRequest(reason: string): void {
  countInto(collectorTally.refusedRequests, reason);
}

function createSeries(client: typeof PromClient) {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry, prefix: 'cds_' });
  new client.Counter({
    name: 'cds_collector_events_total',
    help: 'Events the collector accepted, or refused by reason (one per refused event of a batch)',
    labelNames: ['outcome', 'reason'] as const,
    registers: [registry],
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
  new client.Counter({
    name: 'cds_collector_requests_refused_total',
    help: 'Collector requests refused whole, by error code (authentication, origin, limits, body)',
    labelNames: ['reason'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const [reason, count] of collectorTally.refusedRequests) this.inc({ reason }, count);
    },
  });
  return {
    registry,
    ingestBatches: new client.Counter({
      name: 'cds_ingest_batches_total',
      help: 'Ingest batches, committed or failed (a failed one is rolled back and tried again)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    ingestEvents: new client.Counter({
      name: 'cds_ingest_events_total',
      help: 'Landing lines ingested, by outcome: stored, duplicate, rejected, unparsable',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    ingestBatchDuration: new client.Histogram({
      name: 'cds_ingest_batch_duration_seconds',
      help: 'Time from reading a batch of landing files to its commit',
      buckets: [...DURATION_BUCKETS],
      registers: [registry],
    }),
    ingestLag: new client.Gauge({
      name: 'cds_ingest_lag_seconds',
      help: 'At the last commit, the age of the oldest landing file the batch took',
      registers: [registry],
    }),
    quarantinedParts: new client.Counter({
      name: 'cds_ingest_quarantined_parts_total',
      help: 'Parts of landing files set aside because every batch holding them failed',
      registers: [registry],
    }),
    segmentEvaluations: new client.Counter({
      name: 'cds_segment_evaluations_total',
      help: 'Segment evaluations: over the profiles a batch touched, over a whole workspace (backfill), or failed (the segment is marked with its error)',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    webhookAttempts: new client.Counter({
      name: 'cds_webhook_attempts_total',
      help: 'Webhook delivery attempts, by outcome: delivered, or the failure cause',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    webhookDeliveryLatency: new client.Histogram({
      name: 'cds_webhook_delivery_latency_seconds',
      help: 'From a webhook queued in the outbox to its delivery',
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      registers: [registry],
    }),
    erasurePurges: new client.Counter({
      name: 'cds_erasure_purges_total',
      help: 'Rewrites of the database file that purge erased rows, by outcome',
      labelNames: ['outcome'] as const,
      registers: [registry],
    }),
    landingBacklogFiles: new client.Gauge({
      name: 'cds_landing_backlog_files',
      help: 'Sealed landing files waiting to be ingested',
      registers: [registry],
    }),
    landingBacklogBytes: new client.Gauge({
      name: 'cds_landing_backlog_bytes',
      help: 'Bytes of the sealed landing files waiting to be ingested',
      registers: [registry],
    }),
    landingBacklogOldest: new client.Gauge({
      name: 'cds_landing_backlog_oldest_age_seconds',
      help: 'Age of the oldest sealed landing file waiting to be ingested (0 with no backlog)',
      registers: [registry],
    }),
    streamBacklogMessages: new client.Gauge({
      name: 'cds_stream_backlog_messages',
      help: "Cluster mode: messages of this owner's tenants the stream holds unacknowledged, at the last reading of its consumers",
      registers: [registry],
    }),
    streamBacklogOldest: new client.Gauge({
      name: 'cds_stream_backlog_oldest_age_seconds',
      help: "Cluster mode: age of the oldest message of this owner's stream backlog (0 with none)",
      registers: [registry],
    }),
    streamBehind: new client.Gauge({
      name: 'cds_stream_behind',
      help: 'Cluster mode: 1 while this owner is behind its stream (/readyz 503 ingest_behind), else 0',
      registers: [registry],
    }),
    quarantinedFiles: new client.Gauge({
      name: 'cds_quarantine_files',
      help: 'Quarantined parts of landing files, listed by cds ingest quarantine list',
      registers: [registry],
    }),
    quarantinedLines: new client.Gauge({
      name: 'cds_quarantine_lines',
      help: 'Lines held in quarantined parts',
      registers: [registry],
    }),
    webhookOutbox: new client.Gauge({
      name: 'cds_webhook_outbox',
      help: 'Webhooks in the outbox by status: pending (to send or retry) or failed (given up)',
      labelNames: ['status'] as const,
      registers: [registry],
    }),
    erasuresAwaitingPurge: new client.Gauge({
      name: 'cds_erasures_awaiting_purge',
      help: 'Erasures committed whose rows the database file still holds until the purge rewrites it',
      registers: [registry],
    }),
    forwardedRequests: new client.Counter({
      name: 'cds_forwarded_requests_total',
      help: 'Cluster mode: control-plane requests forwarded to the owner of another shard, by shard and outcome (answered by it, or unreachable)',
      labelNames: ['shard', 'outcome'] as const,
      registers: [registry],
    }),
  };
}

let series: ReturnType<typeof createSeries> | undefined;

/**
 * The process's series, made at their first use, so that prom-client loads only in a process
 * that counts something or is scraped (a server, an ingest), not in every CLI command. Node's
 * own series (GC, event-loop lag) count from then on.
 */
export function prometheusSeries(): ReturnType<typeof createSeries> {
  series ??= createSeries(requirePackage<typeof PromClient>('prom-client'));
  return series;
}

/** Everything `/metrics` answers, in Prometheus' text format, and its content type. */
export async function prometheusText(): Promise<{ text: string; contentType: string }> {
  const { registry } = prometheusSeries();
  return {
    text: `${await registry.metrics()}\n${requestDurations.text()}\n`,
    contentType: registry.contentType,
  };
}
