import { randomBytes } from 'node:crypto';
import { mkdir, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { subjectToken } from '../bus/subjects.js';
import type { Context } from '../context.js';
import { ndjsonFiles } from '../ingest/line-source.js';
import type { IngestSource } from '../ingest/source.js';
import { quarantineFile } from '../quarantine/quarantine.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/file-modes.js';
import type { Session } from '../store/session.js';
import { sessionOf } from '../store/temporary-table.js';
import { openBoxes } from './bus-boxes.js';
import type { BusEvent } from './bus-event.js';

/** Where a batch's messages are written for DuckDB to read, deleted after the batch. */
export function busStagingDir(context: Context): string {
  return join(context.dataDir.root, 'bus-staging');
}

/** The events grouped by tenant, each group in stream order, groups in order of first seen. */
function byTenant(events: readonly BusEvent[]): Map<string, BusEvent[]> {
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
 * A batch's messages written for staging: one NDJSON file per tenant in the staging folder, read
 * by the same `ingest_stage` as landing files, so stream lines meet the same checks. A line's
 * origin is `bus:<tenant>:<first>-<last>` (the stream sequences of its file).
 */
async function writeStagingFiles(
  context: Context,
  groups: Map<string, BusEvent[]>,
): Promise<{ files: string[]; origins: string[] }> {
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
  return { files, origins };
}

/** Stores each tenant's last message whose events are all in the batch as done (`bus_offsets`); never goes back. */
async function advanceOffsets(
  session: Session,
  groups: Map<string, BusEvent[]>,
  now: string,
): Promise<void> {
  const offsets = [...groups].map(([tenantId, events]) => ({
    tenant_id: tenantId,
    last_seq: events.reduce(
      (last, event) => Math.max(last, event.endsMessage ? event.seq : event.seq - 1),
      0,
    ),
  }));
  await session.run('bus_offsets_advance', { offsets: JSON.stringify(offsets), now });
}

/**
 * Messages of the events stream (docs/cluster-design.md §4), a unit per message: a batch stores
 * each tenant's last stream sequence in `bus_offsets` with its events, so a redelivery after a
 * crash between the commit and the acks is skipped exactly (the stream loop acknowledges). A
 * failing batch is split by tenant, whose sequences are kept apart, then in halves in stream
 * order; a message that fails alone is quarantined as a landing file would be (`cds ingest
 * quarantine list` shows it with its tenant and workspace) and its sequence recorded as done.
 * Identifier boxes are opened first (bus-boxes.ts); a message whose box does not open is
 * quarantined as it came, its identifiers still boxed.
 */
export function streamSource(context: Context): IngestSource<BusEvent> {
  return {
    async prepare(events) {
      const groups = byTenant(events);
      const { files, origins } = await writeStagingFiles(context, groups);
      return {
        lines: ndjsonFiles(files, origins),
        files: 0,
        async recordDone(staged, now) {
          await advanceOffsets(sessionOf(staged), groups, now);
        },
        async finish() {
          await Promise.all(files.map((path) => unlink(path).catch(() => undefined)));
        },
      };
    },
    screen(events) {
      const { opened, unopenable } = openBoxes(context, events);
      return {
        admitted: opened,
        refused: unopenable.map(({ event, failure }) => ({ unit: event, failure })),
      };
    },
    partitionOf: (event) => event.tenantId,
    halve: async () => [],
    async quarantine(event, failure, now) {
      const dir = join(
        context.dataDir.landingDir,
        `tenant=${subjectToken(event.tenantId)}`,
        `workspace=${subjectToken(event.workspaceId)}`,
      );
      await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
      const path = join(dir, `bus-${event.seq}-${event.index}.ndjson`);
      await writeFile(path, event.data, { mode: PRIVATE_FILE_MODE });
      const record = await quarantineFile(context.dataDir, path, failure, now);
      await context.store.write((session) => advanceOffsets(session, byTenant([event]), now));
      return record;
    },
  };
}

/** The last sequence the database holds of every tenant that has one. */
export async function readOffsets(context: Context): Promise<Map<string, number>> {
  const rows = await context.store.read((session) =>
    session.all<{ tenant_id: string; last_seq: number }>('bus_offsets'),
  );
  return new Map(rows.map((row) => [row.tenant_id, row.last_seq]));
}
