import { setTimeout as sleep } from 'node:timers/promises';
import { BusUnavailableError } from '../errors.js';
import { componentLog } from '../telemetry/log.js';
import { isRetryablePublishError } from './publisher.js';

/**
 * How long a process keeps trying to start on the bus: a start during a leader election (up to
 * 10.6 s measured) times out on its first watch or consumer request, and three elections in a row
 * (the metadata leader, a bucket's, the stream's) fit.
 */
const START_BUDGET_MS = 60_000;
const PAUSE_MS = 1_000;

/**
 * Runs `start` again while it fails the way a fail-over makes requests fail; each failed attempt
 * cleans up after itself (the callers' own `cleaningUpOnFailure`). A process that only exits
 * would need its supervisor to restart it at the moment the cluster is busiest.
 */
export async function startingThroughFailOver<T>(
  what: string,
  start: () => Promise<T>,
): Promise<T> {
  const deadline = performance.now() + START_BUDGET_MS;
  for (;;) {
    try {
      return await start();
    } catch (error) {
      const transient = isRetryablePublishError(error) || error instanceof BusUnavailableError;
      if (!transient || performance.now() + PAUSE_MS >= deadline) throw error;
      componentLog('bus').warn(
        { err: error },
        `${what} could not start on the bus (a fail-over under way?); trying again`,
      );
      await sleep(PAUSE_MS);
    }
  }
}
