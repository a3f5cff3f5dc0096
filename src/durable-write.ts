import { randomUUID } from 'node:crypto';
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';
import { open, rename, rm, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { syncDirectory, syncDirectorySync } from './sync-directory.js';

/**
 * Replaces the file at `path` whole or not at all. `fill` writes the new content under a
 * temporary name beside it (`<path>.<unique>.tmp`, so two writers never share one, and a leftover
 * is recognisable); that file is synced, renamed over `path`, and the folder synced. A power cut
 * leaves the old file or the new one, never an empty or half-written one, and once this returns
 * the new one survives it.
 */
export async function replaceFileAtomically(
  path: string,
  fill: (temporaryPath: string) => Promise<void>,
): Promise<void> {
  const temporary = `${path}.${process.pid}.${randomUUID()}.tmp`;
  try {
    await fill(temporary);
    const file = await open(temporary, 'r');
    try {
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  await syncDirectory(dirname(path));
}

/** `replaceFileAtomically` with content in memory, the new file made with `mode`. */
export function writeFileAtomically(
  path: string,
  content: string | Buffer,
  mode: number,
): Promise<void> {
  return replaceFileAtomically(path, (temporary) =>
    writeFile(temporary, content, { flag: 'wx', mode }),
  );
}

/**
 * Creates `path` with `content`, failing with EEXIST when it exists (two processes starting
 * together cannot both create it), and syncs it and its folder before returning: its bytes and
 * its name are on disk before anything that relies on them is. Synchronous for the steps that run
 * before anything async may. A failed write may leave the file short: the caller removes it.
 */
export function createFileDurablySync(path: string, content: Buffer, mode: number): void {
  const file = openSync(path, 'wx', mode);
  try {
    if (writeSync(file, content) !== content.length) throw new Error(`${path}: short write`);
    fsyncSync(file);
  } finally {
    closeSync(file);
  }
  syncDirectorySync(dirname(path));
}
