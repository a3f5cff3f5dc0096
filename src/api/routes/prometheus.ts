import type { FastifyInstance, FastifyRequest } from 'fastify';
import { systemClock } from '../../clock.js';
import { UnauthorizedError } from '../../errors.js';
import { listSealedFiles } from '../../ingest/landing-files.js';
import { listQuarantine } from '../../quarantine/quarantine.js';
import type { StreamReadiness } from '../../shards/owner-readiness.js';
import type { DataDir } from '../../store/data-dir.js';
import type { Store } from '../../store/database.js';
import { prometheusSeries, prometheusText } from '../../telemetry/prometheus.js';
import { isOperatorToken } from '../../tenancy/operator.js';

/** What a scrape reads: the data dir always; the store where this process holds it (not `cds collect`). */
export interface ScrapeSource {
  dataDir: DataDir;
  store?: Store;
  /** A bus owner's stream backlog as last read (a scrape costs no request to the bus). */
  streamReadiness?: () => StreamReadiness | null;
}

interface StoredGauges {
  webhooks_pending: number;
  webhooks_failed: number;
  erasures_awaiting_purge: number;
}

async function readGauges(source: ScrapeSource): Promise<void> {
  const {
    landingBacklogFiles,
    landingBacklogBytes,
    landingBacklogOldest,
    quarantinedFiles,
    quarantinedLines,
    webhookOutbox,
    erasuresAwaitingPurge,
    streamBacklogMessages,
    streamBacklogOldest,
    streamBehind,
  } = prometheusSeries();
  const backlog = await listSealedFiles(source.dataDir.landingDir);
  // Against the files' modification times, which are the system clock's.
  const now = systemClock.now().getTime();
  landingBacklogFiles.set(backlog.length);
  landingBacklogBytes.set(backlog.reduce((sum, file) => sum + file.bytes, 0));
  landingBacklogOldest.set(
    backlog.reduce((oldest, file) => Math.max(oldest, (now - file.modifiedAt) / 1000), 0),
  );
  const stream = source.streamReadiness?.() ?? null;
  if (stream) {
    streamBacklogMessages.set(stream.pending);
    streamBacklogOldest.set(stream.lag_seconds);
    streamBehind.set(stream.behind ? 1 : 0);
  }
  const quarantined = await listQuarantine(source.dataDir);
  quarantinedFiles.set(quarantined.length);
  quarantinedLines.set(quarantined.reduce((sum, file) => sum + file.lines, 0));
  if (!source.store || source.store.unavailable()) return;
  const stored = await source.store.read((session) =>
    session.one<StoredGauges>('telemetry_stored_gauges'),
  );
  if (!stored) return;
  webhookOutbox.set({ status: 'pending' }, Number(stored.webhooks_pending));
  webhookOutbox.set({ status: 'failed' }, Number(stored.webhooks_failed));
  erasuresAwaitingPurge.set(Number(stored.erasures_awaiting_purge));
}

function requireOperator(dataDir: DataDir, request: FastifyRequest): void {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  const token = match?.[1];
  if (!token) throw new UnauthorizedError('missing bearer token (Authorization: Bearer <token>)');
  if (!isOperatorToken(dataDir.masterKey, token)) {
    throw new UnauthorizedError('/metrics is read with the operator token');
  }
}

/**
 * `GET /metrics` in Prometheus' text format, for the operator token only: the series name
 * tenants' volumes and failures (docs/decisions.md "Prometheus metrics").
 */
export function prometheusRoute(app: FastifyInstance, source: ScrapeSource): void {
  app.get('/metrics', async (request, reply) => {
    requireOperator(source.dataDir, request);
    await readGauges(source);
    const { text, contentType } = await prometheusText();
    reply.header('content-type', contentType);
    return text;
  });
}
