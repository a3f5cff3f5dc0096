import { describe, expect, it } from 'vitest';
import { collectGarbage } from '../../src/ingest/garbage.js';

describe('collectGarbage', () => {
  it('frees what nothing references any more, at once', () => {
    collectGarbage();
    const baseline = process.memoryUsage().heapUsed;
    let garbage: { index: number; label: string }[] | null = Array.from(
      { length: 1_000_000 },
      (_, index) => ({ index, label: `row ${index}` }),
    );
    const holding = process.memoryUsage().heapUsed;
    expect(holding - baseline).toBeGreaterThan(40 * 1024 * 1024);
    expect(garbage).toHaveLength(1_000_000);
    garbage = null;
    collectGarbage();
    expect(process.memoryUsage().heapUsed - baseline).toBeLessThan(10 * 1024 * 1024);
  });
});
