import type { Logger } from 'pino';
import { backoffMs } from '../backoff.js';
import type { Context } from '../context.js';
import { withoutQuotedValues } from '../redact.js';
import { prometheusSeries } from '../telemetry/prometheus.js';
import { isDataFault } from './isolate.js';
import { runUpkeep } from './upkeep.js';

/** The longest pause between two attempts of a failing batch. */
const MAX_RETRY_DELAY_MS = 60_000;

/** Consecutive failed batches, since the first: `/readyz` shows them until one commits. */
export interface IngestFailure {
  error: Error;
  since: string;
  attempts: number;
}

/**
 * The failed batches in a row of an ingest loop (the landing loop, a cluster owner's loop). A
 * failed batch's work stays (landing files, messages given back) and is tried again after growing
 * pauses, so a batch that cannot fit does not keep the database busy; the failure is logged when
 * it starts and when its message changes, not on every attempt.
 */
export class FailureStreak {
  failure: IngestFailure | null = null;
  /** `performance.now()` when the pause after a failure ends: elapsed time, not the clock's. */
  private retryAt = 0;

  constructor(
    private readonly context: Context,
    private readonly log: () => Logger,
    /** The first pause, doubled per failure up to a minute: the loop's interval. */
    private readonly firstMs: number,
    /** What is logged when a streak starts: where the failed batch's work waits. */
    private readonly failedMessage: string,
  ) {}

  /** How long the pause after the last failure still lasts; 0 or less when it is over. */
  pauseLeftMs(): number {
    return this.retryAt - performance.now();
  }

  /** Ends the pause, for an attempt asked for now rather than on the loop's schedule. */
  endPause(): void {
    this.retryAt = 0;
  }

  succeeded(): void {
    if (this.failure)
      this.log().info(
        { failed_attempts: this.failure.attempts, since: this.failure.since },
        'ingest works again',
      );
    this.failure = null;
    this.retryAt = 0;
  }

  failed(error: Error): void {
    const attempts = (this.failure?.attempts ?? 0) + 1;
    prometheusSeries().ingestBatches.inc({ outcome: 'failed' });
    if (this.failure?.error.message !== error.message)
      this.log().error(
        { cause: withoutQuotedValues(error.message), max_retry_seconds: MAX_RETRY_DELAY_MS / 1000 },
        this.failedMessage,
      );
    this.failure = {
      error,
      since: this.failure?.since ?? this.context.clock.now().toISOString(),
      attempts,
    };
    this.retryAt =
      performance.now() +
      backoffMs(attempts, { firstMs: this.firstMs, longestMs: MAX_RETRY_DELAY_MS });
  }
}

/**
 * The upkeep an ingest loop runs between batches. A definition that makes it fail (a backfill, a
 * segment's first evaluation) must not stop the batches of every tenant: the failure is said once
 * and upkeep is tried again next pass. A fault of the machine throws, failing the pass as a batch
 * would.
 */
export class TolerantUpkeep {
  /** The upkeep failure said last, so that it is said once, not on every pass. */
  private said: string | null = null;

  constructor(
    private readonly context: Context,
    private readonly log: () => Logger,
  ) {}

  async run(): Promise<void> {
    try {
      await runUpkeep(this.context);
      this.said = null;
    } catch (error) {
      if (!isDataFault(error)) throw error;
      const message = withoutQuotedValues((error as Error).message);
      if (this.said !== message)
        this.log().error({ cause: message }, 'upkeep failed; batches go on');
      this.said = message;
    }
  }
}
