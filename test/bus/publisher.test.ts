import { describe, expect, it } from 'vitest';
import {
  DEFAULT_PUBLISH_POLICY,
  isRetryablePublishError,
  type PublishPolicy,
  retryingOnBus,
} from '../../src/bus/publisher.js';
import { BusUnavailableError } from '../../src/errors.js';

const named = (name: string, message = name) => Object.assign(new Error(message), { name });
const policy: PublishPolicy = { ...DEFAULT_PUBLISH_POLICY, budgetMs: 600 };

describe('publishing with retries (docs/cluster-design.md §3)', () => {
  it('retries what a fail-over causes, and nothing else', () => {
    for (const name of ['JetStreamNotEnabled', 'TimeoutError', 'NoResponders', 'ConnectionError'])
      expect(isRetryablePublishError(named(name))).toBe(true);
    const noResponders = Object.assign(new Error('request failed'), {
      name: 'RequestError',
      cause: named('NoResponders'),
    });
    expect(isRetryablePublishError(noResponders)).toBe(true);
    const refused = named('RequestError', 'Permissions Violation for Publish to "x"');
    expect(isRetryablePublishError(refused)).toBe(false);
    expect(isRetryablePublishError(named('ClosedConnectionError'))).toBe(false);
    expect(isRetryablePublishError('not an error')).toBe(false);
  });

  it('succeeds once an attempt does, each attempt given at most its timeout', async () => {
    const timeouts: number[] = [];
    const result = await retryingOnBus(async (timeout) => {
      timeouts.push(timeout);
      if (timeouts.length < 3) throw named('JetStreamNotEnabled');
      return 'acked';
    }, policy);
    expect(result).toBe('acked');
    expect(timeouts).toHaveLength(3);
    for (const timeout of timeouts) expect(timeout).toBeLessThanOrEqual(600);
  });

  it('answers BusUnavailableError with retry-after once the budget is spent', async () => {
    const started = performance.now();
    let attempts = 0;
    const failing = retryingOnBus(async () => {
      attempts += 1;
      throw named('TimeoutError', 'timeout');
    }, policy);
    await expect(failing).rejects.toBeInstanceOf(BusUnavailableError);
    await expect(failing).rejects.toMatchObject({ code: 'bus_unavailable', status: 503 });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeLessThan(policy.budgetMs + 100);
    expect(attempts).toBeGreaterThan(1);
    const error = (await failing.catch((caught: unknown) => caught)) as BusUnavailableError;
    expect(error.retryAfterSeconds).toBeGreaterThan(0);
  });

  it('does not retry a refusal', async () => {
    let attempts = 0;
    await expect(
      retryingOnBus(async () => {
        attempts += 1;
        throw named('RequestError', 'Permissions Violation for Publish to "x"');
      }, policy),
    ).rejects.toMatchObject({ code: 'bus_unavailable' });
    expect(attempts).toBe(1);
  });
});
