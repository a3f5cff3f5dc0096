/** How a retried piece of work backs off: its first pause, doubled per failure up to `longestMs`. */
export interface Backoff {
  firstMs: number;
  longestMs: number;
}

/** The pause after the `failures`-th failure in a row (1 for the first): first, 2·first, 4·first, … */
export function backoffMs(failures: number, backoff: Backoff): number {
  return Math.min(backoff.firstMs * 2 ** Math.max(0, failures - 1), backoff.longestMs);
}

/**
 * `backoffMs` with equal jitter, a random point in the upper half of that pause. Work that one
 * outage failed together comes back spread over the half pause instead of all at once, while each
 * still waits at least half its pause, so the backoff keeps backing off.
 */
export function jitteredBackoffMs(
  failures: number,
  backoff: Backoff,
  random: () => number = Math.random,
): number {
  const pause = backoffMs(failures, backoff);
  return Math.round(pause / 2 + random() * (pause / 2));
}
