import { setTimeout as sleep } from 'node:timers/promises';
import type { JetStreamClient } from '@nats-io/jetstream';
import { type Backoff, jitteredBackoffMs } from '../backoff.js';
import { BusUnavailableError } from '../errors.js';
import { componentLog } from '../telemetry/log.js';

/** One message for the events stream; `msgID` makes a republished copy a duplicate. */
export interface BusMessage {
  subject: string;
  msgID: string;
  data: string | Uint8Array;
}

export interface PublishPolicy {
  /**
   * How long one message is retried before the request fails: a leader election took up to
   * 10.6 s (docs/cluster-design.md §3), so 20 s by default.
   */
  budgetMs: number;
  /** The pause between attempts of one message. */
  backoff: Backoff;
  /** How long one attempt waits for the stream's acknowledgement. */
  attemptTimeoutMs: number;
}

export const DEFAULT_PUBLISH_POLICY: PublishPolicy = {
  budgetMs: 20_000,
  backoff: { firstMs: 100, longestMs: 500 },
  attemptTimeoutMs: 2_000,
};

/** What a client told to come back after a failed publish waits: about one fail-over. */
const RETRY_AFTER_SECONDS = 5;

/** The shortest wait an attempt is given, even at the end of the budget. */
const LAST_ATTEMPT_MS = 100;

/**
 * Failures that a leader election, a node going away or a reconnection cause, and that the same
 * publish later gets past (§3, §7.8). Anything else (a permission refused, a message too large,
 * the connection closed by this process) fails the same way on every attempt.
 */
const RETRYABLE = new Set([
  'JetStreamNotEnabled',
  'TimeoutError',
  'NoResponders',
  'NoRespondersError',
  'ConnectionError',
]);

export function isRetryablePublishError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (RETRYABLE.has(error.name)) return true;
  return error.cause instanceof Error && RETRYABLE.has(error.cause.name);
}

/**
 * Runs `attempt` until it succeeds, pausing between failures that a fail-over explains, for
 * `policy.budgetMs` at most (until `deadline` when several share one). Throws
 * BusUnavailableError once the budget is spent or at the first failure no retry gets past.
 * `attempt` is given how long it may wait for an answer.
 */
export async function retryingOnBus<T>(
  attempt: (timeoutMs: number) => Promise<T>,
  policy: PublishPolicy = DEFAULT_PUBLISH_POLICY,
  deadline = performance.now() + policy.budgetMs,
): Promise<T> {
  for (let failures = 1; ; failures += 1) {
    const remaining = deadline - performance.now();
    try {
      return await attempt(Math.min(policy.attemptTimeoutMs, Math.max(remaining, LAST_ATTEMPT_MS)));
    } catch (error) {
      const cause = (error as Error).message;
      if (!isRetryablePublishError(error)) {
        componentLog('bus').error({ err: error }, 'the bus refused a request');
        throw new BusUnavailableError(cause, RETRY_AFTER_SECONDS);
      }
      const pause = jitteredBackoffMs(failures, policy.backoff);
      if (performance.now() + pause >= deadline)
        throw new BusUnavailableError(
          `${cause}, for ${Math.round(policy.budgetMs / 1000)} s`,
          RETRY_AFTER_SECONDS,
        );
      await sleep(pause);
    }
  }
}

/**
 * Publishes every message at once and resolves when the stream acknowledged them all
 * (pipelined: one round trip for a batch, not one per event). Each message is retried on its own
 * with its msgID, so a copy the stream already holds is dropped. Throws BusUnavailableError (503,
 * `retry-after`) once any message failed for good; the others were still waited for, so nothing
 * is under way when the caller answers.
 */
export async function publishAll(
  js: JetStreamClient,
  messages: readonly BusMessage[],
  policy: PublishPolicy = DEFAULT_PUBLISH_POLICY,
): Promise<void> {
  const deadline = performance.now() + policy.budgetMs;
  const outcomes = await Promise.allSettled(
    messages.map((message) =>
      retryingOnBus(
        (timeout) => js.publish(message.subject, message.data, { msgID: message.msgID, timeout }),
        policy,
        deadline,
      ),
    ),
  );
  const failure = outcomes.find((outcome) => outcome.status === 'rejected');
  if (failure) throw failure.reason;
}
