import { jitteredBackoffMs } from '../backoff.js';

/** The longest wait between two attempts of one delivery. */
export const LONGEST_PAUSE_MS = 60 * 60 * 1000;

/**
 * How long to wait after a delivery's `attempts`-th failure: base, 2·base, 4·base, … at most an
 * hour, with equal jitter, so deliveries that one receiver outage failed come back spread out.
 */
export function retryPauseMs(attempts: number, baseMs: number, random = Math.random): number {
  return jitteredBackoffMs(attempts + 1, { firstMs: baseMs, longestMs: LONGEST_PAUSE_MS }, random);
}
