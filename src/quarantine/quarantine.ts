import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, join, relative, sep } from 'node:path';
import { z } from 'zod';
import type { Context } from '../context.js';
import { writeFileAtomically } from '../durable-write.js';
import { NotFoundError } from '../errors.js';
import { normalizeIdentifier } from '../identity/normalize.js';
import { withoutQuotedValues } from '../redact.js';
import { decodeCursor, type Page, toPage } from '../store/cursor.js';
import type { DataDir } from '../store/data-dir.js';
import { PRIVATE_FILE_MODE } from '../store/file-modes.js';
import { syncDirectory } from '../sync-directory.js';
import type { TenantKeys } from '../tenant-keys.js';

/**
 * Landing lines that fail every batch they are in, set aside with the reason, so that they cost
 * their tenant those lines only and never stop ingest for the others. Kept under the data dir:
 * `quarantine/<id>.ndjson` (the lines as they landed) beside `quarantine/<id>.json` (what failed).
 */
export const quarantinedFileSchema = z.object({
  quarantine_id: z.string(),
  tenant_id: z.string().nullable(),
  workspace_id: z.string().nullable(),
  /** Where it was, relative to the landing folder; `retry` puts it back there. */
  landing_path: z.string(),
  lines: z.number(),
  bytes: z.number(),
  reason: z.string(),
  quarantined_at: z.string(),
});

export type QuarantinedFile = z.infer<typeof quarantinedFileSchema>;

const DATA_SUFFIX = '.ndjson';
const RECORD_SUFFIX = '.json';
const quarantineCursorSchema = z.object({ q: z.string() });

export function quarantineDir(dataDir: DataDir): string {
  return join(dataDir.root, 'quarantine');
}

/** Where a quarantined part's lines lie, as they landed. */
export function quarantinedLinesPath(dataDir: DataDir, record: QuarantinedFile): string {
  return join(quarantineDir(dataDir), `${record.quarantine_id}${DATA_SUFFIX}`);
}

/** `tenant=<t>/workspace=<w>/…`, as collectors lay landing files out (design §2). */
function partitionOf(landingPath: string): {
  tenant_id: string | null;
  workspace_id: string | null;
} {
  const [tenant, workspace] = landingPath.split(sep);
  return {
    tenant_id: tenant?.startsWith('tenant=') ? tenant.slice('tenant='.length) : null,
    workspace_id: workspace?.startsWith('workspace=') ? workspace.slice('workspace='.length) : null,
  };
}

async function countLines(path: string): Promise<number> {
  const bytes = await readFile(path);
  let lines = 0;
  for (let index = bytes.indexOf(0x0a); index >= 0; index = bytes.indexOf(0x0a, index + 1)) lines++;
  return bytes.length > 0 && bytes.at(-1) !== 0x0a ? lines + 1 : lines;
}

/**
 * Moves a sealed landing file into the quarantine with its reason. The record is written first:
 * a crash before the move leaves a record without lines, which the listing passes over, and the
 * file still in landing, where the next batch meets it again.
 */
export async function quarantineFile(
  dataDir: DataDir,
  path: string,
  error: Error,
  now: string,
): Promise<QuarantinedFile> {
  const folder = quarantineDir(dataDir);
  await mkdir(folder, { recursive: true, mode: 0o700 });
  const landingPath = relative(dataDir.landingDir, path);
  const id = `q_${now.replace(/\D/g, '').slice(0, 14)}_${randomBytes(6).toString('hex')}`;
  const record: QuarantinedFile = {
    quarantine_id: id,
    ...partitionOf(landingPath),
    landing_path: landingPath,
    lines: await countLines(path),
    bytes: (await stat(path)).size,
    reason: withoutQuotedValues(error.message),
    quarantined_at: now,
  };
  await writeFileAtomically(
    join(folder, `${id}${RECORD_SUFFIX}`),
    JSON.stringify(record),
    PRIVATE_FILE_MODE,
  );
  await rename(path, join(folder, `${id}${DATA_SUFFIX}`));
  await syncDirectory(folder);
  await syncDirectory(dirname(path));
  return record;
}

/** Every quarantined file whose lines are there, in the order they were set aside. */
export async function listQuarantine(dataDir: DataDir): Promise<QuarantinedFile[]> {
  const folder = quarantineDir(dataDir);
  const names = new Set(await readdir(folder).catch(() => [] as string[]));
  const records: QuarantinedFile[] = [];
  for (const name of names) {
    if (!name.endsWith(RECORD_SUFFIX)) continue;
    const id = name.slice(0, -RECORD_SUFFIX.length);
    if (!names.has(`${id}${DATA_SUFFIX}`)) continue;
    records.push(JSON.parse(await readFile(join(folder, name), 'utf8')) as QuarantinedFile);
  }
  return records.sort((a, b) => a.quarantine_id.localeCompare(b.quarantine_id));
}

/** One page of the listing, after the id a cursor names (ids sort in the order of quarantine). */
export async function quarantinePage(
  dataDir: DataDir,
  limit: number,
  cursor: string | undefined,
): Promise<Page<QuarantinedFile>> {
  const after = cursor === undefined ? '' : decodeCursor(cursor, quarantineCursorSchema).q;
  const rows = (await listQuarantine(dataDir)).filter((record) => record.quarantine_id > after);
  return toPage(
    rows.slice(0, limit + 1),
    limit,
    (record) => ({ q: record.quarantine_id }),
    (record) => record,
  );
}

/**
 * Puts quarantined files back where they landed, so that the next batch reads them again (after
 * the fault was fixed, say). One that fails again comes back to the quarantine. Without an id,
 * every quarantined file goes back. Answers the ids put back.
 */
export async function retryQuarantined(dataDir: DataDir, id?: string): Promise<string[]> {
  const records = (await listQuarantine(dataDir)).filter(
    (record) => id === undefined || record.quarantine_id === id,
  );
  if (id !== undefined && records.length === 0) {
    throw new NotFoundError(`no quarantined file ${id}`);
  }
  const folder = quarantineDir(dataDir);
  for (const record of records) {
    const target = join(dataDir.landingDir, record.landing_path);
    await mkdir(dirname(target), { recursive: true, mode: 0o700 });
    await rename(join(folder, `${record.quarantine_id}${DATA_SUFFIX}`), target);
    await syncDirectory(dirname(target));
    await rm(join(folder, `${record.quarantine_id}${RECORD_SUFFIX}`), { force: true });
  }
  await syncDirectory(folder).catch(() => undefined);
  return records.map((record) => record.quarantine_id);
}

/**
 * A quarantined line that may hold what an erasure removed (design §15: afterwards no byte of the
 * erased identifiers remains in the data directory). A line is kept only when it parses and none
 * of its identifiers, keyed as ingest keys them, was erased at or after the line was received;
 * a line that does not parse cannot be read for its identifiers, nor ever ingested, so it goes.
 */
function holdsErased(line: string, keys: TenantKeys, tombstones: Map<string, string>): boolean {
  let parsed: unknown;
  try {
    parsed = JSON.parse(line);
  } catch {
    return true;
  }
  const { received_at: receivedAt, event } = (parsed ?? {}) as {
    received_at?: unknown;
    event?: { anon_id?: unknown; properties?: { identifiers?: unknown } };
  };
  const candidates: [string, unknown][] = [];
  if (typeof event?.anon_id === 'string' && event.anon_id.startsWith('cookie:')) {
    candidates.push(['cookie', event.anon_id.slice('cookie:'.length)]);
  }
  const identifiers = event?.properties?.identifiers;
  if (typeof identifiers === 'object' && identifiers !== null) {
    candidates.push(...Object.entries(identifiers));
  }
  return candidates.some(([type, raw]) => {
    const normalized = normalizeIdentifier(type, raw);
    const erasedAt =
      normalized === null ? undefined : tombstones.get(keys.identifierKey(type, normalized));
    if (erasedAt === undefined) return false;
    const received = typeof receivedAt === 'string' ? Date.parse(receivedAt) : Number.NaN;
    return !(received > Date.parse(erasedAt));
  });
}

/**
 * Removes from one workspace's quarantined files the lines that carry an identifier an erasure
 * removed; a file left without lines leaves the quarantine. Called after every erasure and for
 * every newly quarantined file (its lines may have been in flight for an erased profile).
 */
export async function scrubErasedFromQuarantine(
  context: Pick<Context, 'dataDir' | 'store' | 'keyRing'>,
  tenantId: string,
  workspaceId: string,
): Promise<void> {
  const records = (await listQuarantine(context.dataDir)).filter(
    (record) => record.tenant_id === tenantId && record.workspace_id === workspaceId,
  );
  if (records.length === 0) return;
  const rows = await context.store.read((session) =>
    session.all<{ identifier_key: string; erased_at: string }>('quarantine_tombstones', {
      tenant_id: tenantId,
      workspace_id: workspaceId,
    }),
  );
  if (rows.length === 0) return;
  const tombstones = new Map(rows.map((row) => [row.identifier_key, row.erased_at]));
  const keys = context.keyRing.forTenant(tenantId);
  const folder = quarantineDir(context.dataDir);
  for (const record of records) {
    const path = join(folder, `${record.quarantine_id}${DATA_SUFFIX}`);
    const lines = (await readFile(path, 'utf8')).split('\n');
    const ended = lines.at(-1) === '';
    if (ended) lines.pop();
    const kept = lines.filter((line) => !holdsErased(line, keys, tombstones));
    if (kept.length === lines.length) continue;
    if (kept.length === 0) {
      await rm(path, { force: true });
      await rm(join(folder, `${record.quarantine_id}${RECORD_SUFFIX}`), { force: true });
      continue;
    }
    const text = kept.join('\n') + (ended ? '\n' : '');
    await writeFileAtomically(path, text, PRIVATE_FILE_MODE);
    await writeFileAtomically(
      join(folder, `${record.quarantine_id}${RECORD_SUFFIX}`),
      JSON.stringify({ ...record, lines: kept.length, bytes: Buffer.byteLength(text) }),
      PRIVATE_FILE_MODE,
    );
  }
  await syncDirectory(folder);
}
