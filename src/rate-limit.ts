import type { Clock } from './clock.js';
import { RateLimitedError } from './errors.js';

/** Most limits count requests per second. */
const SECOND_MS = 1000;

/**
 * Keys one limiter tracks at most. Past it, windows that ended are dropped (at most once a window,
 * so a flood of new keys costs no sweep per request), then the oldest keys, which start over.
 */
export const MAX_TRACKED_KEYS = 100_000;

interface Window {
  startedAt: number;
  count: number;
}

/**
 * Counts requests per key in fixed windows (a second unless told) and refuses those past `limit`.
 * Keys are `Map` keys, so a key spelled `__proto__` or `constructor` is a key like any other.
 * A limit given as a function is read at each request: in cluster mode a collector's share of the
 * limit changes as collectors come and go.
 */
export class RateLimiter {
  private readonly windows = new Map<string, Window>();
  private lastSweepAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly limit: number | (() => number),
    private readonly clock: Clock,
    private readonly windowMs = SECOND_MS,
  ) {}

  /** Counts one request under `key`; throws RateLimitedError when that is one too many. */
  take(key: string): void {
    const now = this.clock.now().getTime();
    const window = this.windowOf(key, now);
    window.count += 1;
    if (window.count > this.currentLimit()) {
      throw new RateLimitedError(this.retryAfterSeconds(window, now));
    }
  }

  /** Throws RateLimitedError when `key` has used up this window, without counting a request. */
  check(key: string): void {
    const now = this.clock.now().getTime();
    const window = this.windows.get(key);
    if (window && !this.ended(window, now) && window.count >= this.currentLimit()) {
      throw new RateLimitedError(this.retryAfterSeconds(window, now));
    }
  }

  private currentLimit(): number {
    return typeof this.limit === 'number' ? this.limit : this.limit();
  }

  private windowOf(key: string, now: number): Window {
    const known = this.windows.get(key);
    if (known) {
      if (this.ended(known, now)) {
        known.startedAt = now;
        known.count = 0;
      }
      return known;
    }
    if (this.windows.size >= MAX_TRACKED_KEYS) this.makeRoom(now);
    const fresh = { startedAt: now, count: 0 };
    this.windows.set(key, fresh);
    return fresh;
  }

  private makeRoom(now: number): void {
    if (now - this.lastSweepAt >= this.windowMs) {
      this.lastSweepAt = now;
      for (const [key, window] of this.windows) {
        if (this.ended(window, now)) this.windows.delete(key);
      }
    }
    for (const key of this.windows.keys()) {
      if (this.windows.size < MAX_TRACKED_KEYS) break;
      this.windows.delete(key);
    }
  }

  private ended(window: Window, now: number): boolean {
    return now - window.startedAt >= this.windowMs || now < window.startedAt;
  }

  private retryAfterSeconds(window: Window, now: number): number {
    return Math.max(1, Math.ceil((window.startedAt + this.windowMs - now) / 1000));
  }
}
