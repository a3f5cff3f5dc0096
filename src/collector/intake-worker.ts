import { AppError } from '../errors.js';
import { type BatchOutcome, type BatchRequest, checkBatch } from './batch-intake.js';
import { Registry, type RegistrySnapshot } from './registry.js';

/** What a worker thread is given: the request and the registry entry of its tenant. */
export interface IntakeTask {
  request: BatchRequest;
  registry: RegistrySnapshot;
}

/** An AppError crosses the thread boundary as data; its class would not survive the copy. */
export interface RefusedBatch {
  refused: { status: number; code: string; message: string; details?: unknown };
}

export default function checkOnWorker(task: IntakeTask): BatchOutcome | RefusedBatch {
  try {
    return checkBatch(task.request, new Registry(task.registry));
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    const { status, code, message, details } = error;
    return { refused: { status, code, message, details } };
  }
}
