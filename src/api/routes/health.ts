import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import { IndexesLoadingError, IngestBehindError } from '../../errors.js';
import type { IngestFailure } from '../../ingest/loop-health.js';
import { ingestStatus, landingBacklog } from '../../ingest/status.js';
import type { StreamReadiness } from '../../shards/owner-readiness.js';
import { isOperatorRequest } from '../auth.js';

/** A bus owner's stream backlog over all its tenants (shards/owner-readiness.ts). */
const publicStream = z.object({
  pending: z.number(),
  lag_seconds: z.number(),
  read_at: z.string().nullable(),
});

/**
 * What anyone may read, a probe or a load balancer: whether the service keeps up, in coarse
 * numbers, and nothing about where or what the data is.
 */
const publicReadiness = z.object({
  status: z.literal('ready'),
  ingest: z.object({
    backlog_files: z.number(),
    /** The oldest event waiting, in a landing file or (on a bus owner) in the stream. */
    lag_seconds: z.number(),
    /** The last ingest batch failed; the operator's view says why. */
    failing: z.boolean(),
    stream: publicStream.optional(),
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
    stream: publicStream
      .extend({
        tenants: z.array(
          z.object({ tenant_id: z.string(), pending: z.number(), lag_seconds: z.number() }),
        ),
      })
      .optional(),
  }),
});

type PublicReadiness = z.infer<typeof publicReadiness>;
type DetailedReadiness = z.infer<typeof detailedReadiness>;

async function readPublic(
  context: Context,
  failure: IngestFailure | null,
  stream: StreamReadiness | null,
): Promise<PublicReadiness> {
  const backlog = await landingBacklog(context);
  return {
    status: 'ready',
    ingest: {
      backlog_files: backlog.backlog_files,
      lag_seconds: Math.max(backlog.lag_seconds, stream?.lag_seconds ?? 0),
      failing: failure !== null,
      ...(stream
        ? {
            stream: {
              pending: stream.pending,
              lag_seconds: stream.lag_seconds,
              read_at: stream.read_at,
            },
          }
        : {}),
    },
  };
}

async function readDetail(
  context: Context,
  failure: IngestFailure | null,
  stream: StreamReadiness | null,
  open: PublicReadiness,
): Promise<DetailedReadiness> {
  const { stream: openStream, ...ingest } = open.ingest;
  return {
    ...open,
    database: context.store.path,
    ingest: {
      ...ingest,
      ...(await ingestStatus(context)),
      // The counters' lag is the landing files'; the public part's counts the stream too.
      lag_seconds: ingest.lag_seconds,
      error: failure?.error.message ?? null,
      error_since: failure?.since ?? null,
      failed_attempts: failure?.attempts ?? 0,
      ...(openStream && stream ? { stream: { ...openStream, tenants: stream.tenants } } : {}),
    },
  };
}

/** What the process running the API knows of its ingest, read at each `/readyz`. */
export interface ReadinessSources {
  ingestFailure: () => IngestFailure | null;
  streamReadiness: () => StreamReadiness | null;
  indexesLoading: () => boolean;
}

/**
 * A failing ingest loop leaves the server ready: the collector still takes events, and they wait
 * in landing files. `/readyz` says that the backlog grows to anyone, and why to the operator.
 * A database DuckDB invalidated makes it not ready (503 `store_unavailable`) until the store has
 * reopened it. A bus owner also shows its stream backlog, and is not ready (503 `ingest_behind`,
 * the figures in `details`) while it is behind its stream (shards/owner-readiness.ts). A starting
 * `cds serve` is not ready (503 `indexes_loading`) until it has read its ingest indexes.
 */
export function healthRoutes(
  app: FastifyInstance,
  context: Context,
  { ingestFailure, streamReadiness, indexesLoading }: ReadinessSources,
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
      const stream = streamReadiness();
      const open = await readPublic(context, failure, stream);
      const answer = isOperatorRequest(context, request)
        ? await readDetail(context, failure, stream, open)
        : open;
      if (stream?.behind) throw new IngestBehindError(stream.behind, { ingest: answer.ingest });
      if (indexesLoading()) throw new IndexesLoadingError();
      return answer;
    },
  );
}
