import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Context } from '../../context.js';
import type { IngestFailure } from '../../ingest/loop.js';
import { ingestStatus } from '../../ingest/status.js';

const readiness = z.object({
  status: z.literal('ready'),
  database: z.string(),
  ingest: z.object({
    batches: z.number(),
    files: z.number(),
    events_ingested: z.number(),
    duplicates: z.number(),
    rejected: z.number(),
    unparsable_lines: z.number(),
    dropped_identifiers: z.number(),
    last_batch_at: z.string().nullable(),
    last_received_at: z.string().nullable(),
    backlog_files: z.number(),
    backlog_bytes: z.number(),
    lag_seconds: z.number(),
    quarantined_files: z.number(),
    quarantined_lines: z.number(),
    error: z.string().nullable(),
    error_since: z.string().nullable(),
    failed_attempts: z.number(),
  }),
});

/**
 * A failing ingest loop leaves the server ready: the collector still takes events, and they wait
 * in landing files. `/readyz` says why the backlog grows. A database DuckDB invalidated makes
 * it not ready (503 `store_unavailable`) until the store has reopened it.
 */
export function healthRoutes(
  app: FastifyInstance,
  context: Context,
  ingestFailure: () => IngestFailure | null,
): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.get('/readyz', { schema: { response: { 200: readiness } } }, async () => {
    const unavailable = context.store.unavailable();
    if (unavailable) throw unavailable;
    const failure = ingestFailure();
    return {
      status: 'ready' as const,
      database: context.store.path,
      ingest: {
        ...(await ingestStatus(context)),
        error: failure?.error.message ?? null,
        error_since: failure?.since ?? null,
        failed_attempts: failure?.attempts ?? 0,
      },
    };
  });
}
