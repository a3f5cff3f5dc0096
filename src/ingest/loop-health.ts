import type { Logger } from 'pino';
import { backoffMs } from '../backoff.js';
import { systemClock } from '../clock.js';
import type { Context } from '../context.js';
import { withoutQuotedValues } from '../redact.js';
import { prometheusSeries } from '../telemetry/prometheus.js';
import type { BatchResult } from './batch.js';
import { type IsolatedIngest, isDataFault } from './isolate.js';
import { runUpkeep } from './upkeep.js';

/** The longest pause between two attempts of a failing batch. */
const MAX_RETRY_DELAY_MS = 60_000;

/**
 * Between batches, the upkeep's maintenance (purges, the live view's window, the last-seen fold,
 * the compaction) runs once in this long at most: with batches every second of live traffic it
 * took 150 ms of each cycle at 10M events (p90 356 ms), which every event waited for.
 */
export const MAINTENANCE_EVERY_MS = 1_000;

/** Consecutive failed batches, since the first: `/readyz` shows them until one commits. */
export interface IngestFailure {
  error: Error;
  since: string;
  attempts: number;
}

export interface LoopHealthConfig {
  /** The loop's component log (`ingest` for the landing loop, `owner` for the stream loop). */
  log: () => Logger;
  /** The first pause after a failure, doubled per failure up to a minute: the loop's interval. */
  firstRetryMs: number;
  /** What is logged when a failure streak starts: where the failed batch's work waits. */
  failedMessage: string;
}

/**
 * The health of an ingest loop, whatever its source (the landing loop, a shard owner's stream
 * loop): its failure streak, its upkeep between batches, and the metrics and log records of what
 * its batches committed and set aside.
 *
 * A failed pass's work stays (landing files, messages given back) and is tried again after
 * growing pauses, so a batch that cannot fit does not keep the database busy; the failure is
 * logged when it starts and when its message changes, not on every attempt. Upkeep that fails on
 * a definition (a backfill, a segment's first evaluation) must not stop the batches of every
 * tenant: it is said once and tried again next pass; a fault of the machine fails the pass.
 */
export class LoopHealth {
  private streak: IngestFailure | null = null;
  /** `performance.now()` when the pause after a failure ends: elapsed time, not the clock's. */
  private retryAt = 0;
  /** The upkeep failure said last, so that it is said once, not on every pass. */
  private upkeepSaid: string | null = null;
  /** `performance.now()` when the upkeep's maintenance last started; -Infinity before. */
  private maintainedAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly context: Context,
    private readonly config: LoopHealthConfig,
  ) {}

  /** The failed passes in a row, until one commits. */
  get failure(): IngestFailure | null {
    return this.streak;
  }

  /** How long the pause after the last failure still lasts; 0 or less when it is over. */
  pauseLeftMs(): number {
    return this.retryAt - performance.now();
  }

  /** Ends the pause, for an attempt asked for now rather than on the loop's schedule. */
  endPause(): void {
    this.retryAt = 0;
  }

  /** Runs one pass of the loop; its end ends or extends the failure streak. Never rejects. */
  attempt(pass: () => Promise<void>): Promise<void> {
    return pass().then(
      () => this.succeeded(),
      (error: unknown) => this.failed(error as Error),
    );
  }

  /**
   * The upkeep of metrics and segments, before a batch (`beforeBatch`) or when there is none; its
   * maintenance before a batch only once in MAINTENANCE_EVERY_MS.
   */
  async upkeep({ beforeBatch }: { beforeBatch: boolean }): Promise<void> {
    const now = performance.now();
    const maintenance = !beforeBatch || now - this.maintainedAt >= MAINTENANCE_EVERY_MS;
    if (maintenance) this.maintainedAt = now;
    try {
      await runUpkeep(this.context, { maintenance });
      this.upkeepSaid = null;
    } catch (error) {
      if (!isDataFault(error)) throw error;
      const message = withoutQuotedValues((error as Error).message);
      if (this.upkeepSaid !== message)
        this.config.log().error({ cause: message }, 'upkeep failed; batches go on');
      this.upkeepSaid = message;
    }
  }

  /**
   * Metrics and log records for what one isolated ingest committed and set aside; `oldestLineAt`
   * is when the oldest of its lines was written (a landing file's modification time, a message's
   * publish time), against the system clock.
   */
  committed(outcome: IsolatedIngest, seconds: number, oldestLineAt: number): void {
    for (const record of outcome.quarantined) {
      prometheusSeries().quarantinedParts.inc();
      this.config.log().warn(
        {
          tenant_id: record.tenant_id,
          lines: record.lines,
          reason: record.reason,
          quarantine_id: record.quarantine_id,
        },
        `ingest quarantined ${record.lines} line(s) of tenant ${record.tenant_id ?? '?'} that fail every batch; the other lines were ingested (see cds ingest quarantine list)`,
      );
    }
    const { batches } = outcome;
    if (batches.length === 0) return;
    prometheusSeries().ingestBatches.inc({ outcome: 'committed' }, batches.length);
    prometheusSeries().ingestBatchDuration.observe(seconds);
    prometheusSeries().ingestLag.set(
      Math.max(0, (systemClock.now().getTime() - oldestLineAt) / 1000),
    );
    const total = (pick: (batch: BatchResult) => number) =>
      batches.reduce((sum, batch) => sum + pick(batch), 0);
    const counts = {
      files: total((batch) => batch.files),
      lines: total((batch) => batch.lines),
      stored: total((batch) => batch.stored),
      duplicates: total((batch) => batch.duplicates),
      rejected: total((batch) => batch.rejected),
      unparsable: total((batch) => batch.unparsable),
      new_profiles: total((batch) => batch.newProfiles),
      merges: total((batch) => batch.merges),
    };
    prometheusSeries().ingestEvents.inc({ outcome: 'stored' }, counts.stored);
    prometheusSeries().ingestEvents.inc({ outcome: 'duplicate' }, counts.duplicates);
    prometheusSeries().ingestEvents.inc({ outcome: 'rejected' }, counts.rejected);
    prometheusSeries().ingestEvents.inc({ outcome: 'unparsable' }, counts.unparsable);
    this.config
      .log()
      .info({ ...counts, duration_ms: Math.round(seconds * 1000) }, 'ingest batch committed');
  }

  private succeeded(): void {
    if (this.streak)
      this.config
        .log()
        .info(
          { failed_attempts: this.streak.attempts, since: this.streak.since },
          'ingest works again',
        );
    this.streak = null;
    this.retryAt = 0;
  }

  private failed(error: Error): void {
    const attempts = (this.streak?.attempts ?? 0) + 1;
    prometheusSeries().ingestBatches.inc({ outcome: 'failed' });
    if (this.streak?.error.message !== error.message)
      this.config.log().error(
        {
          cause: withoutQuotedValues(error.message),
          max_retry_seconds: MAX_RETRY_DELAY_MS / 1000,
        },
        this.config.failedMessage,
      );
    this.streak = {
      error,
      since: this.streak?.since ?? this.context.clock.now().toISOString(),
      attempts,
    };
    this.retryAt =
      performance.now() +
      backoffMs(attempts, { firstMs: this.config.firstRetryMs, longestMs: MAX_RETRY_DELAY_MS });
  }
}
