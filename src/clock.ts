/** Time as cds sees it; tests set it to cross day boundaries without waiting. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
