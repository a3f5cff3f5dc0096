import { closeSync, fsyncSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';

/**
 * Flushes a folder's entries to disk. A file's synced bytes survive a power cut only once the
 * name that leads to them has been synced too, in its folder.
 */
export async function syncDirectory(path: string): Promise<void> {
  const directory = await open(path, 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}

/** `syncDirectory` for the few steps that run before anything async may (opening the data dir). */
export function syncDirectorySync(path: string): void {
  const directory = openSync(path, 'r');
  try {
    fsyncSync(directory);
  } finally {
    closeSync(directory);
  }
}
