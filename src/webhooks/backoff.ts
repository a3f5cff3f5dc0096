/** The longest wait between two attempts of one delivery. */
export const LONGEST_PAUSE_MS = 60 * 60 * 1000;

/**
 * How long to wait after a delivery's `attempts`-th failure: exponential (base, 2·base, 4·base, …,
 * at most an hour) with equal jitter, a random point in the upper half of that step. Deliveries a
 * receiver outage failed together come back spread over the half step instead of all at once,
 * while each still waits at least half its step, so the backoff keeps backing off.
 */
export function retryPauseMs(attempts: number, baseMs: number, random = Math.random): number {
  const step = Math.min(baseMs * 2 ** attempts, LONGEST_PAUSE_MS);
  return Math.round(step / 2 + random() * (step / 2));
}
