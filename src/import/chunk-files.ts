import { createHash } from 'node:crypto';
import { mkdir, open, readdir, rename, rm, rmdir } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { LandingLine } from '../collector/landing-writer.js';
import { SEALED_SUFFIX } from '../landing-format.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/file-modes.js';
import { syncDirectory } from '../sync-directory.js';

/** Changes whenever the way an input becomes chunk files changes, so old records never match. */
const CHUNK_LAYOUT_VERSION = 1;

/** What makes an import of one file the same import as an earlier one. */
export interface ImportIdentityParts {
  /** SHA-256 of the input file. */
  inputDigest: string;
  format: string;
  tenantId: string | null;
  workspaceId: string | null;
  /** Lines of input a chunk holds: other bounds cut other chunks. */
  chunkLines: number;
  /** The workspaces and event types the lines were checked against. */
  catalogDigest: string;
}

/**
 * The import's identity: the chunk files of the same input, read the same way against the same
 * catalog, get the same paths, so a second run finds the ones the first committed. A run after
 * an event type or workspace was added is another import: the lines refused before go in, and
 * the ones stored before count as duplicates.
 */
export function importIdentity(parts: ImportIdentityParts): string {
  const encoded = JSON.stringify([
    CHUNK_LAYOUT_VERSION,
    parts.inputDigest,
    parts.format,
    parts.tenantId,
    parts.workspaceId,
    parts.chunkLines,
    parts.catalogDigest,
  ]);
  return createHash('sha256').update(encoded).digest('hex').slice(0, 24);
}

/** The folder name every chunk file of an import lies in, whatever its partition. */
export function importFolderName(identity: string): string {
  return `import=${identity}`;
}

/**
 * Where the lines of one tenant and workspace of the chunk starting at `offset` (in the
 * decompressed input) go: a landing partition's own folder for the import, so the quarantine,
 * a retry and erasure see its files as any other landing file of that workspace.
 */
export function chunkFilePath(
  landingDir: string,
  identity: string,
  line: Pick<LandingLine, 'tenantId' | 'workspaceId'>,
  offset: number,
): string {
  return join(
    landingDir,
    `tenant=${line.tenantId}`,
    `workspace=${line.workspaceId}`,
    importFolderName(identity),
    `${String(offset).padStart(15, '0')}${SEALED_SUFFIX}`,
  );
}

/** A sealed chunk file, ready to be ingested. */
export interface ChunkFile {
  path: string;
  lines: number;
}

/**
 * Bytes a chunk's lines gather in memory before they are written, all partitions together: a
 * history of thousands of workspaces holds no more, nor a file handle for each.
 */
const WRITE_BYTES = 4 * 1024 * 1024;

interface PendingChunkFile {
  path: string;
  temporaryPath: string;
  texts: string[];
  lines: number;
  /** Whether the temporary file exists yet: the first write makes it, later ones append. */
  started: boolean;
}

/**
 * The files of one chunk: its lines by tenant and workspace, each in the order read, written
 * under a temporary name and renamed to their sealed landing name once synced. A file whose
 * path an earlier run already ingested is not written again: its lines are only counted.
 */
export class ChunkWriter {
  private readonly files = new Map<string, PendingChunkFile>();
  private readonly skippedFiles = new Set<string>();
  private skippedLines = 0;
  private bufferedLength = 0;

  constructor(
    private readonly landingDir: string,
    private readonly identity: string,
    /** Where the chunk starts in the decompressed input. */
    readonly offset: number,
    /** The chunk files of this import ingested before, by path. */
    private readonly done: ReadonlySet<string>,
  ) {}

  /** Adds a line; what the lines gather is written once it reaches `WRITE_BYTES`. */
  async add(line: LandingLine): Promise<void> {
    const path = chunkFilePath(this.landingDir, this.identity, line, this.offset);
    if (this.done.has(path)) {
      this.skippedFiles.add(path);
      this.skippedLines += 1;
      return;
    }
    let file = this.files.get(path);
    if (file === undefined) {
      // Not a landing name (`.ndjson`, `.ndjson.open`): neither ingest nor a collector's start
      // takes a file still being written.
      file = {
        path,
        temporaryPath: `${path}.${process.pid}.tmp`,
        texts: [],
        lines: 0,
        started: false,
      };
      this.files.set(path, file);
    }
    file.texts.push(line.text);
    file.lines += 1;
    this.bufferedLength += line.text.length;
    if (this.bufferedLength >= WRITE_BYTES) {
      for (const pending of this.files.values()) await this.write(pending, false);
      this.bufferedLength = 0;
    }
  }

  /** Lines of this chunk an earlier run ingested, and how many files they were in. */
  get skipped(): { files: number; lines: number } {
    return { files: this.skippedFiles.size, lines: this.skippedLines };
  }

  /** Writes, syncs and seals every file of the chunk; answers them in the order first written. */
  async seal(): Promise<ChunkFile[]> {
    const sealed: ChunkFile[] = [];
    for (const file of this.files.values()) {
      await this.write(file, true);
      await rename(file.temporaryPath, file.path);
      await syncDirectory(dirname(file.path));
      sealed.push({ path: file.path, lines: file.lines });
    }
    this.files.clear();
    return sealed;
  }

  /** Removes what this chunk wrote, after a failure. */
  async discard(): Promise<void> {
    for (const file of this.files.values()) await rm(file.temporaryPath, { force: true });
    this.files.clear();
  }

  /** Appends what the file gathered; `last` syncs it, as it is about to be sealed. */
  private async write(file: PendingChunkFile, last: boolean): Promise<void> {
    if (file.texts.length === 0 && !last) return;
    if (!file.started) await mkdir(dirname(file.path), { recursive: true, mode: PRIVATE_DIR_MODE });
    const handle = await open(file.temporaryPath, file.started ? 'a' : 'w', PRIVATE_FILE_MODE);
    file.started = true;
    try {
      const data = Buffer.from(file.texts.join(''));
      file.texts = [];
      const { bytesWritten } = await handle.write(data);
      if (bytesWritten !== data.length) {
        throw new Error(`${file.temporaryPath}: wrote ${bytesWritten} of ${data.length} bytes`);
      }
      if (last) await handle.datasync();
    } finally {
      await handle.close();
    }
  }
}

/**
 * Removes what a run of an import left in its folders once it ended: files a killed run was still
 * writing, then the folders themselves when nothing is left in them.
 */
export async function tidyImportFolders(folders: Iterable<string>): Promise<void> {
  for (const folder of folders) {
    const names = await readdir(folder).catch(() => null);
    if (names === null) continue;
    for (const name of names) {
      if (name.endsWith('.tmp')) await rm(join(folder, name), { force: true });
    }
    await rmdir(folder).catch(() => undefined);
  }
}
