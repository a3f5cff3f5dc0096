import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { subjectToken } from '../bus/subjects.js';
import { type Context, nowIso } from '../context.js';
import type { BatchResult } from '../ingest/batch.js';
import { isDataFault } from '../ingest/isolate.js';
import { recordQuarantined } from '../ingest/recent-events.js';
import {
  type QuarantinedFile,
  quarantineFile,
  scrubErasedFromQuarantine,
} from '../quarantine/quarantine.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/file-modes.js';
import { type BusEvent, byTenant, ingestBusBatch, offsetsParam } from './bus-batch.js';
import { openBoxes } from './bus-boxes.js';

export interface IsolatedBusIngest {
  batches: BatchResult[];
  quarantined: QuarantinedFile[];
}

/**
 * Sets one event that fails every batch aside as the landing path does (`cds ingest quarantine
 * list` shows it with its tenant and workspace), then records its sequence as done, so its
 * redelivery is skipped like any event the database holds.
 */
async function quarantineEvent(
  context: Context,
  event: BusEvent,
  failure: Error,
): Promise<QuarantinedFile> {
  const dir = join(
    context.dataDir.landingDir,
    `tenant=${subjectToken(event.tenantId)}`,
    `workspace=${subjectToken(event.workspaceId)}`,
  );
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const path = join(dir, `bus-${event.seq}-${event.index}.ndjson`);
  await writeFile(path, event.data, { mode: PRIVATE_FILE_MODE });
  const now = nowIso(context);
  const record = await quarantineFile(context.dataDir, path, failure, now);
  await context.store.write((session) =>
    session.run('bus_offsets_advance', { offsets: offsetsParam(byTenant([event])), now }),
  );
  if (record.tenant_id !== null && record.workspace_id !== null)
    await scrubErasedFromQuarantine(context, record.tenant_id, record.workspace_id);
  await recordQuarantined(context, record);
  return record;
}

/**
 * Ingests the events as one batch; when some tenant's lines make it fail, it is split, by tenant
 * first, then in halves in stream order, until the failing events are found: each is quarantined,
 * and every other part commits on its own. As with landing files (ingest/isolate.ts), one
 * tenant's bad event costs that event only, and a fault of the machine fails the whole batch.
 * Identifier boxes are opened first (bus-boxes.ts); an event whose box does not open is
 * quarantined as it came, its identifiers still boxed.
 */
export async function ingestBusIsolating(
  context: Context,
  events: readonly BusEvent[],
): Promise<IsolatedBusIngest> {
  const outcome: IsolatedBusIngest = { batches: [], quarantined: [] };
  const { opened, unopenable } = openBoxes(context, events);
  await ingestInto(context, opened, outcome);
  // After the rest: a quarantined event's sequence is recorded as done for its tenant.
  for (const { event, failure } of unopenable)
    outcome.quarantined.push(await quarantineEvent(context, event, failure));
  return outcome;
}

async function ingestInto(
  context: Context,
  events: readonly BusEvent[],
  outcome: IsolatedBusIngest,
): Promise<void> {
  let failure: Error;
  try {
    outcome.batches.push(await ingestBusBatch(context, events));
    return;
  } catch (error) {
    if (!isDataFault(error)) throw error;
    failure = error as Error;
  }
  const groups = byTenant(events);
  if (groups.size > 1) {
    for (const group of groups.values()) await ingestInto(context, group, outcome);
    return;
  }
  if (events.length === 1) {
    outcome.quarantined.push(await quarantineEvent(context, events[0] as BusEvent, failure));
    return;
  }
  const half = Math.ceil(events.length / 2);
  await ingestInto(context, events.slice(0, half), outcome);
  await ingestInto(context, events.slice(half), outcome);
}
