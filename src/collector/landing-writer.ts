import { randomBytes } from 'node:crypto';
import { type FileHandle, mkdir, open, readdir, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { LandingWriteError, ShuttingDownError } from '../errors.js';
import { OPEN_SUFFIX } from '../landing-format.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/file-modes.js';
import { syncDirectory } from '../sync-directory.js';
import { componentLog } from '../telemetry/log.js';

export interface LandingWriterConfig {
  /** The landing folder of the data directory. */
  root: string;
  /** Seal a file once it holds this many bytes (design §2: 64 MiB). */
  maxFileBytes: number;
  /** Seal a file this long after it was opened, so ingest sees events within seconds (2 s). */
  maxFileAgeMs: number;
}

/** One line for a landing file and the partition it belongs in. */
export interface LandingLine {
  tenantId: string;
  workspaceId: string;
  receivedAt: string;
  /** The envelope's id: with the tenant and workspace, its msgID on the bus. */
  eventId: string;
  text: string;
}

/** Lines of one partition, already encoded: what the writer appends. */
export interface LandingChunk {
  tenantId: string;
  workspaceId: string;
  receivedAt: string;
  data: Uint8Array;
}

interface OpenFile {
  handle: FileHandle;
  openPath: string;
  bytes: number;
  /** `performance.now()`: its age is elapsed time, which a change of the system clock must not move. */
  openedAt: number;
}

interface Pending {
  chunks: LandingChunk[];
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** `<pid>x<random>`: the pid lets a later process tell an orphaned `.open` file from a live one. */
export function newCollectorId(): string {
  return `c${process.pid}x${randomBytes(3).toString('hex')}`;
}

/**
 * The folders whose entries changed when `dir` got a new file: `dir`, and when `mkdir` made
 * folders from `firstCreated` down to `dir`, the parent of each of them.
 */
function foldersToSync(root: string, dir: string, firstCreated: string | undefined): string[] {
  const folders = [dir];
  if (firstCreated === undefined) return folders;
  for (let folder = dir; folder !== dirname(firstCreated) && folder.startsWith(root); ) {
    folder = dirname(folder);
    folders.push(folder);
  }
  return folders;
}

/** Tenant and workspace ids are validated slugs, so the path needs no normalising. */
function partitionOf(chunk: LandingChunk): string {
  const date = chunk.receivedAt.slice(0, 10);
  const hour = chunk.receivedAt.slice(11, 13);
  return `tenant=${chunk.tenantId}/workspace=${chunk.workspaceId}/date=${date}/hour=${hour}`;
}

/**
 * Encodes lines straight into one buffer sized for the worst case (3 bytes a UTF-16 unit):
 * several times faster than joining the strings and encoding the join. The result is copied to
 * its exact size, as a chunk made on a worker thread is copied whole, spare bytes and all.
 */
export function utf8Concat(texts: string[]): Uint8Array {
  let units = 0;
  for (const text of texts) units += text.length;
  const buffer = Buffer.allocUnsafe(units * 3);
  let bytes = 0;
  for (const text of texts) bytes += buffer.write(text, bytes);
  return new Uint8Array(buffer.subarray(0, bytes));
}

/** One chunk per tenant, workspace and receipt time, in the order the lines came. */
export function encodeLines(lines: readonly Omit<LandingLine, 'eventId'>[]): LandingChunk[] {
  const byPartition = new Map<string, { first: Omit<LandingLine, 'eventId'>; texts: string[] }>();
  for (const line of lines) {
    const key = `${line.tenantId}/${line.workspaceId}/${line.receivedAt}`;
    const group = byPartition.get(key);
    if (group) group.texts.push(line.text);
    else byPartition.set(key, { first: line, texts: [line.text] });
  }
  return [...byPartition.values()].map(({ first, texts }) => ({
    tenantId: first.tenantId,
    workspaceId: first.workspaceId,
    receivedAt: first.receivedAt,
    data: utf8Concat(texts),
  }));
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Appends envelopes to partitioned NDJSON files (design §2). `append` resolves only once its lines
 * are on disk: requests that arrive while a write is under way wait for the next one, and each
 * round is one write per file and one `fdatasync` per file for every request in it (group commit).
 */
export class LandingWriter {
  readonly collectorId = newCollectorId();
  private readonly files = new Map<string, OpenFile>();
  private pending: Pending[] = [];
  private flushing: Promise<void> | null = null;
  private sequence = 0;
  private sealTimer: NodeJS.Timeout | null = null;
  private agedSealTimer: NodeJS.Timeout | null = null;
  private closed = false;

  /** Told after a file with lines is sealed: an ingest loop in the same process starts at once. */
  onSealed: (() => void) | null = null;

  constructor(private readonly config: LandingWriterConfig) {}

  start(): void {
    this.sealTimer = setInterval(
      () => {
        this.runExclusive(() => this.sealDue(false)).catch(() => undefined);
      },
      Math.max(Math.floor(this.config.maxFileAgeMs / 4), 50),
    );
    this.sealTimer.unref();
  }

  append(chunks: LandingChunk[]): Promise<void> {
    // A request whose checking outlived the server's close (its client went away meanwhile, so
    // the server stopped waiting for it) took nothing: it is answered as shutting down.
    if (this.closed) return Promise.reject(new ShuttingDownError());
    if (chunks.length === 0) return Promise.resolve();
    return new Promise((resolve, reject) => {
      this.pending.push({ chunks, resolve, reject });
      this.flushing ??= this.flushLoop();
    });
  }

  /** Seals every open file now (ingest wants them, or the process is stopping). */
  sealAll(): Promise<void> {
    return this.runExclusive(() => this.sealDue(true));
  }

  /**
   * Seals the open files once they are `ageMs` old, before their age is due: the ingest loop of
   * this process has caught up and can take them (docs/decisions.md, "Sealing for a caught-up
   * loop"). Those old enough are sealed now; the rest when the oldest of them reaches the age.
   */
  sealOnceAged(ageMs: number): Promise<void> {
    return this.runExclusive(async () => {
      await this.sealDue(false, ageMs);
      if (this.files.size === 0 || this.agedSealTimer || this.closed) return;
      const oldest = Math.min(...[...this.files.values()].map((file) => file.openedAt));
      this.agedSealTimer = setTimeout(
        () => {
          this.agedSealTimer = null;
          this.runExclusive(() => this.sealDue(false, ageMs)).catch(() => undefined);
        },
        Math.max(0, oldest + ageMs - performance.now()),
      );
      this.agedSealTimer.unref();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.sealTimer) clearInterval(this.sealTimer);
    if (this.agedSealTimer) clearTimeout(this.agedSealTimer);
    await this.flushing;
    await this.sealAll();
  }

  private exclusive: Promise<void> = Promise.resolve();

  /** Writes and seals take turns, so a file is never renamed while it is written. */
  private runExclusive(work: () => Promise<void>): Promise<void> {
    const run = this.exclusive.then(work);
    this.exclusive = run.catch(() => undefined);
    return run;
  }

  private async flushLoop(): Promise<void> {
    while (this.pending.length > 0) {
      const group = this.pending;
      this.pending = [];
      try {
        await this.runExclusive(() => this.writeGroup(group));
        for (const request of group) request.resolve();
      } catch (error) {
        for (const request of group) request.reject(error);
      }
    }
    this.flushing = null;
  }

  private async writeGroup(group: Pending[]): Promise<void> {
    const byPartition = new Map<string, Uint8Array[]>();
    for (const request of group) {
      for (const chunk of request.chunks) {
        const partition = partitionOf(chunk);
        const buffers = byPartition.get(partition);
        if (buffers) buffers.push(chunk.data);
        else byPartition.set(partition, [chunk.data]);
      }
    }
    // Every partition's write settles before the group fails, so none is still under way when
    // the next group or a seal runs.
    const outcomes = await Promise.allSettled(
      [...byPartition].map(([partition, buffers]) => this.appendSynced(partition, buffers)),
    );
    const failure = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failure) throw new LandingWriteError((failure.reason as Error).message);
    await this.sealDue(false);
  }

  /**
   * A file's bytes count once they are synced. A short or failed write leaves part of a line
   * behind, and the next line appended would be glued to it and lost at ingest: the file is cut
   * back to its last synced line and sealed, and the partition's next write starts a new file.
   */
  private async appendSynced(partition: string, buffers: Uint8Array[]): Promise<void> {
    const file = await this.fileFor(partition);
    const bytes = buffers.reduce((sum, buffer) => sum + buffer.byteLength, 0);
    try {
      const { bytesWritten } = await file.handle.writev(buffers);
      if (bytesWritten !== bytes) throw new Error(`wrote ${bytesWritten} of ${bytes} bytes`);
      await file.handle.datasync();
      file.bytes += bytes;
    } catch (error) {
      this.files.delete(partition);
      await file.handle.truncate(file.bytes).catch(() => undefined);
      await file.handle.close().catch(() => undefined);
      await this.seal(file).catch(() => undefined);
      throw error;
    }
  }

  private async fileFor(partition: string): Promise<OpenFile> {
    const existing = this.files.get(partition);
    if (existing) return existing;
    const dir = join(this.config.root, partition);
    const firstCreated = await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
    this.sequence += 1;
    const openPath = join(
      dir,
      `${this.collectorId}-${String(this.sequence).padStart(8, '0')}${OPEN_SUFFIX}`,
    );
    const file: OpenFile = {
      handle: await open(openPath, 'a', PRIVATE_FILE_MODE),
      openPath,
      bytes: 0,
      openedAt: performance.now(),
    };
    // The file's name, and the partition folders made for it, are synced before its first lines
    // are acknowledged: a power cut could otherwise lose the file with synced lines in it.
    for (const folder of foldersToSync(this.config.root, dir, firstCreated)) {
      await syncDirectory(folder);
    }
    this.files.set(partition, file);
    return file;
  }

  private async sealDue(all: boolean, maxAgeMs = this.config.maxFileAgeMs): Promise<void> {
    const now = performance.now();
    for (const [partition, file] of this.files) {
      if (!all && file.bytes < this.config.maxFileBytes && now - file.openedAt < maxAgeMs) continue;
      this.files.delete(partition);
      // A file that cannot be sealed keeps its synced lines under its `.open` name, and the next
      // collector to start seals it (sealOrphans); the other files are sealed all the same, and
      // the requests whose write came before this seal stay acknowledged.
      try {
        await file.handle.close();
        await this.seal(file);
      } catch (error) {
        componentLog('collector').error(
          { path: file.openPath, err: error },
          'could not seal a landing file; its events wait in it until a collector starts again',
        );
      }
    }
  }

  /** A closed file becomes sealed for ingest, or goes if it holds nothing. */
  private async seal(file: OpenFile): Promise<void> {
    if (file.bytes === 0) await unlink(file.openPath);
    else {
      await rename(file.openPath, file.openPath.slice(0, -'.open'.length));
      this.onSealed?.();
    }
  }
}

/**
 * Seals `.open` files left by collectors that are no longer running (a crash or SIGKILL): their
 * acknowledged lines were synced, and a torn last line is skipped by ingest. Run it before this
 * process starts its own writer: a file named with this process's pid is taken as an orphan.
 */
export async function sealOrphans(root: string): Promise<number> {
  let sealed = 0;
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    if (!entry.isFile() || !entry.name.endsWith(OPEN_SUFFIX)) continue;
    const pid = Number(/^c(\d+)x/.exec(entry.name)?.[1]);
    if (Number.isFinite(pid) && processIsAlive(pid) && pid !== process.pid) continue;
    const path = join(entry.parentPath, entry.name);
    await rename(path, path.slice(0, -'.open'.length));
    sealed += 1;
  }
  return sealed;
}
