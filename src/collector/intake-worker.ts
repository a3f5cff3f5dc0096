import { AppError } from '../errors.js';
import { type BatchOutcome, type BatchRequest, checkBatch } from './batch-intake.js';
import { Registry, type RegistrySnapshot } from './registry.js';
import { checkTrackingBatch, type TrackingBatchRequest } from './tracking-api/intake.js';

/**
 * What a worker thread is given: the request, in our envelope batch or in Segment's batch, and
 * the registry entry of its tenant.
 */
export type IntakeTask =
  | { format: 'native'; request: BatchRequest; registry: RegistrySnapshot }
  | { format: 'tracking-api'; request: TrackingBatchRequest; registry: RegistrySnapshot };

/** An AppError crosses the thread boundary as data; its class would not survive the copy. */
export interface RefusedBatch {
  refused: { status: number; code: string; message: string; details?: unknown };
}

export default function checkOnWorker(task: IntakeTask): BatchOutcome | RefusedBatch {
  try {
    const registry = new Registry(task.registry);
    return task.format === 'tracking-api'
      ? checkTrackingBatch(task.request, registry)
      : checkBatch(task.request, registry);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const { status, code, message, details } = error;
    return { refused: { status, code, message, details } };
  }
}
