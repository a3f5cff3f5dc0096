/** Time as cds sees it; tests set it to cross day boundaries without waiting. */
export interface Clock {
  now(): Date;
}

/**
 * The system's time. `Context.clock` is for what cds records and decides by the day; this one, by
 * name, for what is measured against the world outside (file times, a webhook receiver's clock,
 * real waits), which a clock a test moves or holds still must not change.
 */
export const systemClock: Clock = { now: () => new Date() };
