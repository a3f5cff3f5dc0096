import type { Clock } from '../clock.js';
import { RateLimitedError } from '../errors.js';

/**
 * Erasures one tenant may ask for per minute; more answer 429. Each erasure is cheap to answer
 * but its bytes cost a share of a rewrite of the whole file, which takes every tenant's writes
 * with it: a burst of 20 passes, a loop over a customer list does not.
 */
export const ERASURES_PER_MINUTE = 60;
const WINDOW_MS = 60_000;

/** A fixed one-minute window per tenant, keyed by the validated tenant id of the route. */
export class ErasureRateLimit {
  private readonly windows = new Map<string, { startedAt: number; taken: number }>();

  constructor(private readonly clock: Clock) {}

  /** Counts one erasure for `tenantId`, or throws `RateLimitedError` with the wait left. */
  take(tenantId: string): void {
    const now = this.clock.now().getTime();
    const window = this.windows.get(tenantId);
    if (!window || now - window.startedAt >= WINDOW_MS) {
      this.forgetEnded(now);
      this.windows.set(tenantId, { startedAt: now, taken: 1 });
      return;
    }
    if (window.taken >= ERASURES_PER_MINUTE) {
      throw new RateLimitedError(
        Math.max(1, Math.ceil((window.startedAt + WINDOW_MS - now) / 1000)),
      );
    }
    window.taken++;
  }

  /** Windows that ended hold nothing worth keeping: the map stays as large as the active tenants. */
  private forgetEnded(now: number): void {
    for (const [tenantId, window] of this.windows) {
      if (now - window.startedAt >= WINDOW_MS) this.windows.delete(tenantId);
    }
  }
}
