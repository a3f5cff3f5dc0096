import { describe, expect, it } from 'vitest';
import { backoffMs, jitteredBackoffMs } from '../src/backoff.js';

describe('backoff', () => {
  const backoff = { firstMs: 1000, longestMs: 10_000 };

  it('doubles from the first pause after each failure, up to the longest', () => {
    expect([1, 2, 3, 4, 5, 50].map((failures) => backoffMs(failures, backoff))).toEqual([
      1000, 2000, 4000, 8000, 10_000, 10_000,
    ]);
  });

  it('jitters within the upper half of the pause', () => {
    expect(jitteredBackoffMs(3, backoff, () => 0)).toBe(2000);
    expect(jitteredBackoffMs(3, backoff, () => 1)).toBe(4000);
  });
});
