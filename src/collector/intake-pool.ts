import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Piscina } from 'piscina';
import { AppError } from '../errors.js';
import { PACKAGE_ROOT } from '../package-root.js';
import { type BatchOutcome, type BatchRequest, checkBatch } from './batch-intake.js';
import type { IntakeTask, RefusedBatch } from './intake-worker.js';
import type { Registry } from './registry.js';
import { checkTrackingBatch, type TrackingBatchRequest } from './tracking-api/intake.js';

/** Worker threads start on the first large batch and stop after this long without one. */
const IDLE_MS = 30_000;

/**
 * Batch bodies up to this many characters are checked on the request thread; larger ones on the
 * worker threads, where the hand-over (about 0.2 ms) is small next to the checking itself.
 */
const INLINE_BATCH_CHARS = 64 * 1024;

/**
 * The worker file in the parent's own form: the bundle's entry when cds runs built, or
 * TypeScript when the sources run directly (the tests), which the worker then loads through tsx.
 */
function workerOptions(): { filename: string; execArgv: string[] } {
  if (import.meta.url.endsWith('.ts')) {
    return {
      filename: new URL('./intake-worker.ts', import.meta.url).href,
      execArgv: ['--import', 'tsx'],
    };
  }
  const bundled = join(PACKAGE_ROOT, 'dist', 'bundle', 'collector', 'intake-worker.js');
  return { filename: pathToFileURL(bundled).href, execArgv: [] };
}

/**
 * Checks batch bodies, the large ones on worker threads: parsing, validating and encoding take
 * about 8 µs an event, which would otherwise hold the one thread that also answers every other
 * request.
 */
export class IntakePool {
  private readonly pool = new Piscina<IntakeTask, BatchOutcome | RefusedBatch>({
    ...workerOptions(),
    minThreads: 0,
    maxThreads: availableParallelism(),
    idleTimeout: IDLE_MS,
  });

  /** A batch of our envelopes (`/v1/events/batch`, `/v1/server/events/batch`). */
  async check(request: BatchRequest, registry: Registry): Promise<BatchOutcome> {
    if (request.body.length <= INLINE_BATCH_CHARS) return checkBatch(request, registry);
    const catalog = registry.eventCatalogOf(request.scope.tenantId);
    return this.run({ format: 'native', request, registry: catalog });
  }

  /** A batch of Segment's messages (`/v1/batch`). */
  async checkTrackingBatch(
    request: TrackingBatchRequest,
    registry: Registry,
  ): Promise<BatchOutcome> {
    if (request.body.length <= INLINE_BATCH_CHARS) return checkTrackingBatch(request, registry);
    const catalog = registry.eventCatalogOf(request.scope.tenantId);
    return this.run({ format: 'tracking-api', request, registry: catalog });
  }

  private async run(task: IntakeTask): Promise<BatchOutcome> {
    const outcome = await this.pool.run(task);
    if ('refused' in outcome) {
      const { status, code, message, details } = outcome.refused;
      throw new AppError(status, code, message, details);
    }
    return outcome;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
