import { createHash } from 'node:crypto';
import { dirname, sep } from 'node:path';
import type { Fault } from '../collector/accept.js';
import { Registry, readRegistrySnapshot } from '../collector/registry.js';
import { type Context, nowIso } from '../context.js';
import { ConfigError, NotFoundError, ValidationError } from '../errors.js';
import { ingestIsolating } from '../ingest/isolate.js';
import { landingSource } from '../ingest/landing-source.js';
import { runUpkeep } from '../ingest/upkeep.js';
import { traced } from '../trace.js';
import {
  type ChunkFile,
  ChunkWriter,
  importFolderName,
  importIdentity,
  tidyImportFolders,
} from './chunk-files.js';
import {
  formatOfLine,
  type HistoryFormat,
  HistoryLines,
  type ImportTarget,
} from './history-lines.js';
import {
  fileDigest,
  firstLines,
  type InputFile,
  MAX_LINE_BYTES,
  readLines,
} from './input-files.js';

export interface ImportRequest {
  files: InputFile[];
  /** `auto`: each file's format is told by its first lines. */
  format: HistoryFormat | 'auto';
  target: ImportTarget;
  /** Lines of input a chunk (one ingest batch) holds: `max_batch_events`. */
  chunkLines: number;
}

/** What the import reports as it goes. */
export interface ImportObserver {
  /** A chunk was ingested (or found ingested before): the input's bytes read so far, its lines. */
  chunkDone(done: { inputBytes: number; lines: number }): void;
  /** Something to say as it happens, beside the progress (lines ingest quarantined). */
  warn(line: string): void;
}

/** One line the import refused, where it is: never what it held (it may hold identifiers). */
export interface RefusedLine {
  file: string;
  line: number;
  code: string;
  message: string;
}

/** The first refused lines are listed with their place, up to this many; the rest are counted. */
const LISTED_REFUSALS = 20;

/** What an import did (`cds import`, its `--json`). */
export interface ImportSummary {
  files: number;
  /** Lines read (empty ones aside). */
  lines: number;
  stored: number;
  duplicates: number;
  /** Lines refused, by the import's checks (a collector's) or by ingest. */
  rejected: number;
  rejected_by_reason: Record<string, number>;
  /** The first refused lines the import's checks found, with their place. */
  rejected_lines: RefusedLine[];
  /** Lines ingest set aside in the quarantine (cds ingest quarantine list). */
  quarantined: number;
  /** Lines an earlier run of the same import had ingested, which this one skipped. */
  already_imported: number;
  /** Whether an earlier run of this import had begun (and was cut off, or finished). */
  resumed: boolean;
  bytes: number;
  seconds: number;
}

function emptySummary(files: InputFile[]): ImportSummary {
  return {
    files: files.length,
    lines: 0,
    stored: 0,
    duplicates: 0,
    rejected: 0,
    rejected_by_reason: {},
    rejected_lines: [],
    quarantined: 0,
    already_imported: 0,
    resumed: false,
    bytes: files.reduce((sum, file) => sum + file.bytes, 0),
    seconds: 0,
  };
}

/** Counts per reason, kept in a Map (reasons are codes, but stay data) and shown sorted. */
class ReasonCounts {
  private readonly counts = new Map<string, number>();

  add(reason: string, lines: number): void {
    this.counts.set(reason, (this.counts.get(reason) ?? 0) + lines);
  }

  asObject(): Record<string, number> {
    return Object.fromEntries([...this.counts].sort(([a], [b]) => a.localeCompare(b)));
  }
}

/** The registry's workspaces and event types: what a line is checked against, as a digest. */
function catalogDigest(registry: Registry, tenants: string[]): string {
  const catalog = tenants.map((tenant) => {
    const entry = registry.eventCatalogOf(tenant).tenants[0];
    return [tenant, entry?.workspaces ?? [], entry?.event_types ?? []];
  });
  return createHash('sha256').update(JSON.stringify(catalog)).digest('hex');
}

async function loadRegistry(context: Context): Promise<{ registry: Registry; tenants: string[] }> {
  const snapshot = await context.store.read((session) =>
    readRegistrySnapshot(session, nowIso(context), 0),
  );
  return {
    registry: new Registry(snapshot),
    tenants: snapshot.tenants.map((tenant) => tenant.tenant_id),
  };
}

/** Refuses a `--tenant` or `--workspace` the store does not hold, before any line is read. */
function checkTarget(registry: Registry, target: ImportTarget): void {
  const { tenantId, workspaceId } = target;
  if (tenantId === null) return;
  if (registry.eventCatalogOf(tenantId).tenants.length === 0) {
    throw new NotFoundError(`tenant ${tenantId} does not exist`);
  }
  if (workspaceId !== null && !registry.hasWorkspace(tenantId, workspaceId)) {
    throw new NotFoundError(
      `workspace ${workspaceId} of tenant ${tenantId} does not exist (create it first: PUT /v1/tenants/${tenantId}/workspaces/${workspaceId})`,
    );
  }
}

const FORMAT_PROBE_LINES = 100;

/** The file's format as asked, or as its first lines tell; a Segment export needs a target. */
async function formatOf(
  file: InputFile,
  asked: ImportRequest['format'],
  target: ImportTarget,
): Promise<HistoryFormat> {
  let format: HistoryFormat | null = asked === 'auto' ? null : asked;
  if (format === null) {
    const lines = await firstLines(file.path, FORMAT_PROBE_LINES);
    format = lines.length === 0 ? 'envelope' : null;
    for (const line of lines) {
      format = formatOfLine(line);
      if (format !== null) break;
    }
    if (format === null) {
      throw new ConfigError(
        '--format',
        `cannot tell from its first lines whether ${file.path} holds envelopes or Segment calls: give --format envelope or --format segment`,
      );
    }
  }
  if (format === 'segment' && (target.tenantId === null || target.workspaceId === null)) {
    throw new ConfigError(
      '--tenant and --workspace',
      `${file.path} holds Segment calls, whose write key names no cds workspace: give the tenant and workspace they go to`,
    );
  }
  return format;
}

/** One file of the import, as planned before any line of any file is read. */
interface PlannedFile {
  file: InputFile;
  format: HistoryFormat;
  digest: string;
  identity: string;
}

/**
 * Imports history (docs/decisions.md "Importing history"): each file, read as a stream, becomes
 * chunks of `chunkLines` lines; each chunk's lines are checked as a collector checks them and
 * written as sealed landing files at paths made from the import's identity and the chunk's
 * offset; the landing engine ingests them (`ingestIsolating`), recording each file in its batch's
 * transaction. A run cut off and run again makes the same paths and skips those recorded.
 * Reading and checking the next chunk overlaps the ingest of the one before.
 */
export async function importHistory(
  context: Context,
  request: ImportRequest,
  observer: ImportObserver,
): Promise<ImportSummary> {
  const startedAt = performance.now();
  const { registry, tenants } = await loadRegistry(context);
  checkTarget(registry, request.target);
  // Lines of other tenants are refused whatever their catalog: only the target's counts then.
  const { tenantId } = request.target;
  const catalog = catalogDigest(registry, tenantId === null ? tenants : [tenantId]);
  const planned: PlannedFile[] = [];
  for (const file of request.files) {
    const format = await formatOf(file, request.format, request.target);
    const digest = await traced('import digest', () => fileDigest(file.path));
    const identity = importIdentity({
      inputDigest: digest,
      format,
      tenantId: request.target.tenantId,
      workspaceId: request.target.workspaceId,
      chunkLines: request.chunkLines,
      catalogDigest: catalog,
    });
    planned.push({ file, format, digest, identity });
  }
  const run = new ImportRun(context, request, observer, registry);
  for (const plan of planned) await run.importFile(plan);
  await run.finish();
  await runUpkeep(context);
  const summary = run.summary;
  summary.seconds = Math.round(performance.now() - startedAt) / 1000;
  return summary;
}

/** The state of one `importHistory`: totals, and the chunk being ingested while the next is read. */
class ImportRun {
  readonly summary: ImportSummary;
  private readonly reasons = new ReasonCounts();
  private readonly folders = new Set<string>();
  /** The ingest of the chunk before, which the next chunk's sealing waits for. */
  private ingesting: Promise<void> = Promise.resolve();
  /** Bytes of input files read before the current one. */
  private bytesBefore = 0;

  constructor(
    private readonly context: Context,
    private readonly request: ImportRequest,
    private readonly observer: ImportObserver,
    private readonly registry: Registry,
  ) {
    this.summary = emptySummary(request.files);
  }

  async importFile(plan: PlannedFile): Promise<void> {
    const done = await this.donePaths(plan.identity);
    if (done.size > 0) this.summary.resumed = true;
    const lines = new HistoryLines(
      plan.format,
      this.request.target,
      this.registry,
      plan.digest,
      this.context.clock.now().getTime(),
    );
    const { landingDir } = this.context.dataDir;
    let chunk: ChunkWriter | null = null;
    let chunkLines = 0;
    try {
      for await (const batch of readLines(plan.file.path)) {
        for (const line of batch) {
          chunk ??= new ChunkWriter(landingDir, plan.identity, line.offset, done);
          chunkLines += 1;
          const outcome: ReturnType<HistoryLines['convert']> =
            line.text === null
              ? {
                  code: 'line_too_long',
                  path: 'line',
                  reason: `is longer than ${MAX_LINE_BYTES} bytes`,
                }
              : lines.convert(line.text, line.number);
          if ('text' in outcome) await chunk.add(outcome);
          else this.refused(plan, line.number, outcome);
          if (chunkLines === this.request.chunkLines) {
            await this.hand(chunk, chunkLines, this.bytesBefore + line.fileBytes);
            chunk = null;
            chunkLines = 0;
          }
        }
      }
      if (chunk) await this.hand(chunk, chunkLines, this.bytesBefore + plan.file.bytes);
    } catch (error) {
      await chunk?.discard();
      await this.ingesting.catch(() => undefined);
      throw readFailure(plan.file.path, error);
    }
    this.bytesBefore += plan.file.bytes;
  }

  /** Waits for the chunk under way, then tidies the import folders. */
  async finish(): Promise<void> {
    await this.ingesting;
    await tidyImportFolders(this.folders);
    this.summary.rejected_by_reason = this.reasons.asObject();
  }

  private async donePaths(identity: string): Promise<Set<string>> {
    const rows = await this.context.store.read((session) =>
      session.all<{ path: string }>('import_done_files', {
        folder: `${sep}${importFolderName(identity)}${sep}`,
      }),
    );
    return new Set(rows.map((row) => row.path));
  }

  private refused(plan: PlannedFile, line: number, fault: Fault): void {
    this.reasons.add(fault.code, 1);
    this.summary.rejected += 1;
    if (this.summary.rejected_lines.length < LISTED_REFUSALS) {
      this.summary.rejected_lines.push({
        file: plan.file.path,
        line,
        code: fault.code,
        message: `${fault.path}: ${fault.reason}`,
      });
    }
  }

  /**
   * Seals a full chunk once the one before is ingested (so at most one chunk waits on disk), and
   * starts its ingest without waiting for it: the next chunk is read meanwhile.
   */
  private async hand(chunk: ChunkWriter, lines: number, inputBytes: number): Promise<void> {
    await traced('import wait for the chunk before', () => this.ingesting);
    const files = await traced('import seal chunk', () => chunk.seal());
    this.summary.lines += lines;
    this.summary.already_imported += chunk.skipped.lines;
    for (const file of files) this.folders.add(dirname(file.path));
    const ingesting = this.ingest(files).then(() => this.observer.chunkDone({ inputBytes, lines }));
    // Awaited by the next chunk or by `finish`; until then its failure must not go unheard.
    ingesting.catch(() => undefined);
    this.ingesting = ingesting;
  }

  private async ingest(files: ChunkFile[]): Promise<void> {
    if (files.length === 0) return;
    const paths = files.map((file) => file.path);
    const { batches, quarantined } = await traced('import ingest chunk', () =>
      ingestIsolating(this.context, landingSource(this.context), paths),
    );
    let rejectedByIngest = 0;
    for (const batch of batches) {
      this.summary.stored += batch.stored;
      this.summary.duplicates += batch.duplicates;
      rejectedByIngest += batch.rejected;
    }
    for (const record of quarantined) {
      this.summary.quarantined += record.lines;
      this.observer.warn(
        `ingest quarantined ${record.lines} line(s) of tenant ${record.tenant_id ?? '?'} that fail every batch: ${record.reason} (see cds ingest quarantine list)`,
      );
    }
    if (rejectedByIngest === 0) return;
    this.summary.rejected += rejectedByIngest;
    const reasons = await this.context.store.read((session) =>
      session.all<{ reason: string; lines: number }>('import_rejection_reasons', {
        paths: JSON.stringify(paths),
      }),
    );
    let named = 0;
    for (const { reason, lines } of reasons) {
      this.reasons.add(reason, lines);
      named += lines;
    }
    // Lines of a customer erased after they were received leave no rejection record (design §15).
    if (rejectedByIngest > named) this.reasons.add('erased', rejectedByIngest - named);
  }
}

/** A file that cannot be read to its end (a gzip cut short), named with what went wrong. */
function readFailure(path: string, error: unknown): unknown {
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === 'string' && code.startsWith('Z_')) {
    return ValidationError.field(
      path,
      `is not whole gzip (${(error as Error).message}); the chunks before the fault were imported, and the same import run again on a mended file stores each event once`,
    );
  }
  return error;
}
