import { randomBytes } from 'node:crypto';
import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { subjectToken } from '../bus/subjects.js';
import { type Context, nowIso } from '../context.js';
import { type BatchResult, batchResult, closeBatch } from '../ingest/batch.js';
import type { LineSource } from '../ingest/line-source.js';
import { announceCommitted } from '../ingest/live-feed.js';
import { ingestLines } from '../ingest/pipeline.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/file-modes.js';

/** One event message of the stream, as an owner ingests it. */
export interface BusEvent {
  tenantId: string;
  workspaceId: string;
  /** The stream sequence of the message it came in: a request chunk (docs/cluster-design.md §3). */
  seq: number;
  /** Its place among its message's events, from 0. */
  index: number;
  /**
   * Whether it is its message's last event: a batch records a message's sequence as in only with
   * its last event, so a message whose events were split between batches (a bisect) is
   * delivered again whole after a crash between them, never skipped half ingested.
   */
  endsMessage: boolean;
  /** Its landing line, as the collector wrote it. */
  data: Uint8Array;
}

/** Where a batch's messages are written for DuckDB to read, deleted after the batch. */
export function busStagingDir(context: Context): string {
  return join(context.dataDir.root, 'bus-staging');
}

/** The events grouped by tenant, each group in stream order, groups in order of first seen. */
export function byTenant(events: readonly BusEvent[]): Map<string, BusEvent[]> {
  const groups = new Map<string, BusEvent[]>();
  for (const event of events) {
    const group = groups.get(event.tenantId);
    if (group) group.push(event);
    else groups.set(event.tenantId, [event]);
  }
  for (const group of groups.values()) group.sort((a, b) => a.seq - b.seq);
  return groups;
}

const NEWLINE = 0x0a;

function ndjson(events: readonly BusEvent[]): Buffer {
  const parts: Uint8Array[] = [];
  for (const event of events) {
    parts.push(event.data);
    if (event.data.at(-1) !== NEWLINE) parts.push(Uint8Array.of(NEWLINE));
  }
  return Buffer.concat(parts);
}

/**
 * A batch's messages as a line source: one NDJSON file per tenant in the staging folder, staged
 * with the same `ingest_stage` as landing files, so bus lines meet the same checks. A line's
 * origin is `bus:<tenant>:<first>-<last>` (the stream sequences of its file).
 */
async function busLines(
  context: Context,
  groups: Map<string, BusEvent[]>,
): Promise<{ source: LineSource; files: string[] }> {
  const dir = busStagingDir(context);
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const batchId = randomBytes(6).toString('hex');
  const files: string[] = [];
  const origins: string[] = [];
  for (const [tenantId, events] of groups) {
    const first = events[0]?.seq ?? 0;
    const last = events.at(-1)?.seq ?? 0;
    const path = join(dir, `${batchId}-${subjectToken(tenantId)}-${first}-${last}.ndjson`);
    await writeFile(path, ndjson(events), { mode: PRIVATE_FILE_MODE });
    files.push(path);
    origins.push(`bus:${tenantId}:${first}-${last}`);
  }
  return {
    files,
    source: {
      origins,
      async stage(session, catalog) {
        await session.run('ingest_stage', { paths: JSON.stringify(files), ...catalog });
      },
    },
  };
}

export const EMPTY_BATCH: BatchResult = {
  files: 0,
  lines: 0,
  stored: 0,
  duplicates: 0,
  rejected: 0,
  unparsable: 0,
  droppedIdentifiers: 0,
  newProfiles: 0,
  merges: 0,
};

/** The last sequence of each tenant of the batch, as `bus_offsets_advance` binds it. */
export function offsetsParam(groups: Map<string, BusEvent[]>): string {
  return JSON.stringify(
    [...groups].map(([tenantId, events]) => ({
      tenant_id: tenantId,
      last_seq: events.reduce(
        (last, event) => Math.max(last, event.endsMessage ? event.seq : event.seq - 1),
        0,
      ),
    })),
  );
}

/**
 * One micro-batch of bus messages, every tenant's in one transaction: the same steps as a landing
 * batch (pipeline.ts), and each tenant's last stream sequence in `bus_offsets`, committed with
 * its events, so a redelivery after a crash between the commit and the acks is skipped exactly.
 */
export async function ingestBusBatch(
  context: Context,
  events: readonly BusEvent[],
): Promise<BatchResult> {
  if (events.length === 0) return EMPTY_BATCH;
  const groups = byTenant(events);
  const { source, files } = await busLines(context, groups);
  try {
    const { batch, advances } = await context.store.write(
      async (session) => {
        const now = nowIso(context);
        const ingested = await ingestLines(context, session, source, now);
        const batch = batchResult(0, ingested);
        await session.run('bus_offsets_advance', { offsets: offsetsParam(groups), now });
        await closeBatch(session, batch, ingested, now);
        return { batch, advances: ingested.advances };
      },
      { large: true },
    );
    announceCommitted(context.store, advances);
    return batch;
  } finally {
    await Promise.all(files.map((path) => unlink(path).catch(() => undefined)));
  }
}

/** The last sequence the database holds of every tenant that has one. */
export async function readOffsets(context: Context): Promise<Map<string, number>> {
  const rows = await context.store.read((session) =>
    session.all<{ tenant_id: string; last_seq: number }>('bus_offsets'),
  );
  return new Map(rows.map((row) => [row.tenant_id, row.last_seq]));
}
