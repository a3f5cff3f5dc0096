import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import type { IngestFailure } from '../../ingest/loop-health.js';
import { ingestStatus, landingBacklog } from '../../ingest/status.js';
import { isOperatorRequest } from '../auth.js';

/**
 * What anyone may read, a probe or a load balancer: whether the service keeps up, in coarse
 * numbers, and nothing about where or what the data is.
 */
const publicReadiness = z.object({
  status: z.literal('ready'),
  ingest: z.object({
    backlog_files: z.number(),
    lag_seconds: z.number(),
    /** The last ingest batch failed; the operator's view says why. */
    failing: z.boolean(),
  }),
});

/** What the operator credential reads besides: paths, counters and the raw errors. */
const detailedReadiness = publicReadiness.extend({
  database: z.string(),
  ingest: publicReadiness.shape.ingest.extend({
    batches: z.number(),
    files: z.number(),
    events_ingested: z.number(),
    duplicates: z.number(),
    rejected: z.number(),
    unparsable_lines: z.number(),
    dropped_identifiers: z.number(),
    last_batch_at: z.string().nullable(),
    last_received_at: z.string().nullable(),
    backlog_bytes: z.number(),
    quarantined_files: z.number(),
    quarantined_lines: z.number(),
    error: z.string().nullable(),
    error_since: z.string().nullable(),
    failed_attempts: z.number(),
  }),
});

type PublicReadiness = z.infer<typeof publicReadiness>;
type DetailedReadiness = z.infer<typeof detailedReadiness>;

async function readPublic(
  context: Context,
  failure: IngestFailure | null,
): Promise<PublicReadiness> {
  const backlog = await landingBacklog(context);
  return {
    status: 'ready',
    ingest: {
      backlog_files: backlog.backlog_files,
      lag_seconds: backlog.lag_seconds,
      failing: failure !== null,
    },
  };
}

async function readDetail(
  context: Context,
  failure: IngestFailure | null,
  open: PublicReadiness,
): Promise<DetailedReadiness> {
  return {
    ...open,
    database: context.store.path,
    ingest: {
      ...open.ingest,
      ...(await ingestStatus(context)),
      error: failure?.error.message ?? null,
      error_since: failure?.since ?? null,
      failed_attempts: failure?.attempts ?? 0,
    },
  };
}

/**
 * A failing ingest loop leaves the server ready: the collector still takes events, and they wait
 * in landing files. `/readyz` says that the backlog grows to anyone, and why to the operator.
 * A database DuckDB invalidated makes it not ready (503 `store_unavailable`) until the store has
 * reopened it.
 */
export function healthRoutes(
  app: FastifyInstance,
  context: Context,
  ingestFailure: () => IngestFailure | null,
): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get(
    '/readyz',
    // The detailed shape first: an answer without its fields is the public one.
    { schema: { response: { 200: z.union([detailedReadiness, publicReadiness]) } } },
    async (request) => {
      const unavailable = context.store.unavailable();
      if (unavailable) throw unavailable;
      const failure = ingestFailure();
      const open = await readPublic(context, failure);
      return isOperatorRequest(context, request) ? readDetail(context, failure, open) : open;
    },
  );
}
