import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { SEALED_SUFFIX } from '../landing-format.js';

export interface SealedFile {
  path: string;
  bytes: number;
  modifiedAt: number;
}

/**
 * Sealed landing files, in path order: partitions by tenant, workspace, date and hour, then each
 * collector's files in sequence. Ingest reads them in this order, so events keep it.
 */
export async function listSealedFiles(root: string): Promise<SealedFile[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  const paths = entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(SEALED_SUFFIX))
    .map((entry) => join(entry.parentPath, entry.name))
    .sort();
  const files = await Promise.all(
    paths.map(async (path) => {
      const info = await stat(path).catch(() => null);
      return info ? { path, bytes: info.size, modifiedAt: info.mtimeMs } : null;
    }),
  );
  return files.filter((file): file is SealedFile => file !== null);
}

export interface FileDigest {
  path: string;
  size: number;
  sha256: string;
}

/** Size and SHA-256 of each file, for the `ingested_files` record (design §9). */
export function digestFiles(paths: string[]): Promise<FileDigest[]> {
  return Promise.all(
    paths.map(
      (path) =>
        new Promise<FileDigest>((resolve, reject) => {
          const hash = createHash('sha256');
          let size = 0;
          createReadStream(path, { highWaterMark: 1024 * 1024 })
            .on('data', (chunk: string | Buffer) => {
              size += chunk.length;
              hash.update(chunk);
            })
            .on('error', reject)
            .on('end', () => resolve({ path, size, sha256: hash.digest('hex') }));
        }),
    ),
  );
}
