import type { StreamBacklogReading } from './stream-backlog.js';

/** One tenant's stream backlog as `/readyz` shows it to the operator. */
export interface TenantStreamLag {
  tenant_id: string;
  pending: number;
  lag_seconds: number;
}

/** An owner's stream backlog and whether it keeps up (`/readyz`, `/metrics`). */
export interface StreamReadiness {
  /** Messages of the owner's tenants not yet acknowledged, all tenants together. */
  pending: number;
  /** Age of the oldest of them, in seconds; 0 with none. */
  lag_seconds: number;
  /** When the figures were read from the consumers (every few seconds); null before. */
  read_at: string | null;
  /** The tenants with a backlog, the oldest first. */
  tenants: TenantStreamLag[];
  /** Why the owner is not ready, in a sentence; null while it keeps up. */
  behind: string | null;
}

export interface ReadinessInputs {
  reading: StreamBacklogReading;
  /** How long the owner loop's batches have failed in a row; null while they commit. */
  loopFailingMs: number | null;
  /** `bus_ready_max_lag_ms`. */
  maxLagMs: number;
  /** The system clock's now: the stream's times are the NATS servers'. */
  now: Date;
}

const seconds = (ms: number) => Math.max(0, ms / 1000);

/**
 * An owner is behind its stream, so not ready, when the oldest event it has not acknowledged is
 * older than `bus_ready_max_lag_ms`, or for that long its batches fail or its backlog cannot be
 * read. The age grows between readings from the stored time of that event, so a stuck owner
 * turns not ready even while the reading ages; it turns ready at the first reading after it has
 * caught up.
 */
export function streamReadiness({
  reading,
  loopFailingMs,
  maxLagMs,
  now,
}: ReadinessInputs): StreamReadiness {
  const tenants = reading.tenants
    .filter((tenant) => tenant.pending > 0)
    .map((tenant) => ({
      tenant_id: tenant.tenantId,
      pending: tenant.pending,
      lag_seconds: tenant.oldestAt ? seconds(now.getTime() - tenant.oldestAt.getTime()) : 0,
    }))
    .sort((a, b) => b.lag_seconds - a.lag_seconds);
  const lag = tenants[0]?.lag_seconds ?? 0;
  const limit = `bus_ready_max_lag_ms (${maxLagMs} ms)`;
  let behind: string | null = null;
  if (lag * 1000 > maxLagMs)
    behind = `the oldest event of its stream backlog is ${Math.floor(lag)} s old, more than ${limit}`;
  else if (loopFailingMs !== null && loopFailingMs > maxLagMs)
    behind = `its ingest batches have failed for ${Math.floor(loopFailingMs / 1000)} s, more than ${limit}`;
  else if (
    reading.failingSince !== null &&
    now.getTime() - reading.failingSince.getTime() > maxLagMs
  )
    behind = `its stream backlog could not be read for more than ${limit}`;
  return {
    pending: tenants.reduce((sum, tenant) => sum + tenant.pending, 0),
    lag_seconds: lag,
    read_at: reading.readAt?.toISOString() ?? null,
    tenants,
    behind,
  };
}

/** A bus owner's readiness while it is still taking its tenants: not ready, nothing read yet. */
export function startingReadiness(): StreamReadiness {
  return {
    pending: 0,
    lag_seconds: 0,
    read_at: null,
    tenants: [],
    behind: 'it is still starting (taking its tenants and reading their consumers)',
  };
}
