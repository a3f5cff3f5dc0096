import { type Context, nowIso } from '../context.js';
import { AppError } from '../errors.js';
import { type QuarantinedFile, scrubErasedFromQuarantine } from '../quarantine/quarantine.js';
import { type BatchResult, ingestBatch } from './batch.js';
import { recordQuarantined } from './recent-events.js';
import type { IngestSource } from './source.js';

/**
 * Failures of the machine rather than of the lines: a full disk, an I/O error, memory, a database
 * DuckDB has invalidated, a transaction an earlier failure aborted (a line's own failure is
 * reported by the statement that reads it, not by the next one). Splitting the batch would fail
 * every part alike and quarantine good lines, so these fail the batch as they are, and the loop
 * tries it again later.
 */
const ENVIRONMENT_FAULT =
  /^(IO Error|FATAL Error|Out of Memory Error)|invalidated|No space left|Could not write|disk is full|Current transaction is aborted/i;

export function isDataFault(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof AppError) return error.status < 500;
  if (typeof (error as NodeJS.ErrnoException).code === 'string') return false;
  return !ENVIRONMENT_FAULT.test(error.message);
}

export interface IsolatedIngest {
  batches: BatchResult[];
  quarantined: QuarantinedFile[];
}

/**
 * Ingests the units as one batch. When the lines of one tenant make it fail, it is split, first
 * by the source's partitions, then in halves, until the failing unit is found and cannot be cut
 * further: it is quarantined with the error, and every other part commits on its own. One
 * tenant's bad line thus costs that tenant the line, never another tenant's ingest. Parts keep
 * the units' order, so events are still taken in the order they came. A fault of the machine
 * fails the whole batch as it is.
 */
export async function ingestIsolating<Unit>(
  context: Context,
  source: IngestSource<Unit>,
  units: readonly Unit[],
): Promise<IsolatedIngest> {
  const outcome: IsolatedIngest = { batches: [], quarantined: [] };
  const { admitted, refused } = source.screen?.(units) ?? { admitted: [...units], refused: [] };
  await bisect(context, source, admitted, outcome);
  for (const { unit, failure } of refused)
    outcome.quarantined.push(await setAside(context, source, unit, failure));
  return outcome;
}

async function bisect<Unit>(
  context: Context,
  source: IngestSource<Unit>,
  units: readonly Unit[],
  outcome: IsolatedIngest,
): Promise<void> {
  let failure: Error;
  try {
    outcome.batches.push(await ingestBatch(context, source, units));
    return;
  } catch (error) {
    if (!isDataFault(error)) throw error;
    failure = error as Error;
  }
  const parts = await smallerParts(source, units);
  if (parts.length === 0) {
    outcome.quarantined.push(await setAside(context, source, units[0] as Unit, failure));
    return;
  }
  for (const part of parts) await bisect(context, source, part, outcome);
}

/** The source's partitions when the units span several; else halves; none for one uncuttable unit. */
async function smallerParts<Unit>(
  source: IngestSource<Unit>,
  units: readonly Unit[],
): Promise<Unit[][]> {
  const partitions = new Map<string, Unit[]>();
  for (const unit of units) {
    const key = source.partitionOf(unit);
    const partition = partitions.get(key);
    if (partition) partition.push(unit);
    else partitions.set(key, [unit]);
  }
  if (partitions.size > 1) return [...partitions.values()];
  if (units.length > 1) {
    const half = Math.ceil(units.length / 2);
    return [units.slice(0, half), units.slice(half)];
  }
  return (await source.halve(units[0] as Unit)).map((part) => [part]);
}

/**
 * Quarantines one unit, then removes from its workspace's quarantine the lines an earlier erasure
 * covers, and shows it in the live view.
 */
async function setAside<Unit>(
  context: Context,
  source: IngestSource<Unit>,
  unit: Unit,
  failure: Error,
): Promise<QuarantinedFile> {
  const record = await source.quarantine(unit, failure, nowIso(context));
  if (record.tenant_id !== null && record.workspace_id !== null)
    await scrubErasedFromQuarantine(context, record.tenant_id, record.workspace_id);
  await recordQuarantined(context, record);
  return record;
}
