import { sep } from 'node:path';
import { type Context, nowIso } from '../context.js';
import { AppError } from '../errors.js';
import {
  type QuarantinedFile,
  quarantineFile,
  scrubErasedFromQuarantine,
} from '../quarantine/quarantine.js';
import { type BatchResult, ingestBatch } from './batch.js';
import { recordQuarantined } from './recent-events.js';
import { halveSealedFile } from './split-file.js';

/**
 * Failures of the machine rather than of the lines: a full disk, an I/O error, memory, a database
 * DuckDB has invalidated. Splitting the batch would fail every part alike and quarantine good
 * lines, so these fail the batch as they are, and the loop tries it again later.
 */
const ENVIRONMENT_FAULT =
  /^(IO Error|FATAL Error|Out of Memory Error)|invalidated|No space left|Could not write|disk is full/i;

export function isDataFault(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error instanceof AppError) return error.status < 500;
  if (typeof (error as NodeJS.ErrnoException).code === 'string') return false;
  return !ENVIRONMENT_FAULT.test(error.message);
}

/** The landing partition `tenant=<t>/workspace=<w>` a sealed file lies in. */
function partitionKey(path: string): string {
  const parts = path.split(sep);
  const tenant = parts.findIndex((part) => part.startsWith('tenant='));
  return tenant < 0 ? path : parts.slice(tenant, tenant + 2).join(sep);
}

/** The files grouped by partition, in order; one group per file when all share a partition. */
function smallerGroups(paths: string[]): string[][] {
  const groups = new Map<string, string[]>();
  for (const path of paths) {
    const key = partitionKey(path);
    groups.set(key, [...(groups.get(key) ?? []), path]);
  }
  return groups.size > 1 ? [...groups.values()] : paths.map((path) => [path]);
}

export interface IsolatedIngest {
  batches: BatchResult[];
  quarantined: QuarantinedFile[];
}

/**
 * Ingests the files as one batch. When the lines of one tenant make it fail, it is split, first by
 * tenant and workspace, then by file, then each failing file in halves, until the failing lines
 * are found: they are quarantined with the error, and every other part commits on its own. One
 * tenant's bad line thus costs that tenant the line, never another tenant's ingest. Parts keep
 * the files' order, so events are still taken in the order they landed.
 */
export async function ingestIsolating(context: Context, paths: string[]): Promise<IsolatedIngest> {
  const outcome: IsolatedIngest = { batches: [], quarantined: [] };
  await ingestInto(context, paths, outcome);
  return outcome;
}

async function ingestInto(context: Context, paths: string[], outcome: IsolatedIngest) {
  let failure: Error;
  try {
    outcome.batches.push(await ingestBatch(context, paths));
    return;
  } catch (error) {
    if (!isDataFault(error)) throw error;
    failure = error as Error;
  }
  if (paths.length > 1) {
    for (const group of smallerGroups(paths)) await ingestInto(context, group, outcome);
    return;
  }
  const only = paths[0] as string;
  const halves = await halveSealedFile(only);
  if (halves.length === 0) {
    const record = await quarantineFile(context.dataDir, only, failure, nowIso(context));
    if (record.tenant_id !== null && record.workspace_id !== null) {
      await scrubErasedFromQuarantine(context, record.tenant_id, record.workspace_id);
    }
    await recordQuarantined(context, record);
    outcome.quarantined.push(record);
    return;
  }
  for (const half of halves) await ingestInto(context, [half], outcome);
}
