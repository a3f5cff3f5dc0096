import { createReadStream } from 'node:fs';
import { open, readdir, rename, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { SEALED_SUFFIX } from '../landing-format.js';
import { PRIVATE_FILE_MODE } from '../store/file-modes.js';
import { syncDirectory } from '../sync-directory.js';

/** A part is written under this suffix, which ingest does not read, then renamed to `.ndjson`. */
const PART_WRITING_SUFFIX = '.ndjson.splitting';
const NEWLINE = 0x0a;

/**
 * `name.ndjson` becomes `name.p000001.ndjson`, …: a part sorts where its file did (the `.` is
 * kept), so events keep their order across files.
 */
function partPath(path: string, part: number, suffix: string): string {
  return `${path.slice(0, -SEALED_SUFFIX.length)}.p${String(part).padStart(6, '0')}${suffix}`;
}

/** Parts an earlier split left half-written when it was cut off. */
async function removeUnfinishedParts(path: string): Promise<void> {
  const prefix = `${basename(path, SEALED_SUFFIX)}.p`;
  const names = await readdir(dirname(path));
  await Promise.all(
    names
      .filter((name) => name.startsWith(prefix) && name.endsWith(PART_WRITING_SUFFIX))
      .map((name) => rm(join(dirname(path), name), { force: true })),
  );
}

/**
 * Where each line ends (the offset after its newline; a last line without one ends at the end of
 * the file), read in chunks.
 */
async function lineEnds(path: string): Promise<number[]> {
  const ends: number[] = [];
  let offset = 0;
  for await (const chunk of createReadStream(path, { highWaterMark: 1024 * 1024 })) {
    const bytes = chunk as Buffer;
    for (let index = bytes.indexOf(NEWLINE); index >= 0; index = bytes.indexOf(NEWLINE, index + 1))
      ends.push(offset + index + 1);
    offset += bytes.length;
  }
  if (offset > (ends.at(-1) ?? 0)) ends.push(offset);
  return ends;
}

/**
 * Copies bytes `start` to `end` (exclusive) of `source` into a new file, synced to disk. A write
 * the disk cuts short fails the split: the part would lack lines, and the file they are in would
 * be removed after it.
 */
async function copyRange(source: string, start: number, end: number, target: string) {
  const handle = await open(target, 'w', PRIVATE_FILE_MODE);
  try {
    const range = createReadStream(source, { start, end: end - 1, highWaterMark: 1024 * 1024 });
    for await (const chunk of range) {
      const { bytesWritten } = await handle.write(chunk as Buffer);
      if (bytesWritten !== (chunk as Buffer).length) {
        throw new Error(`${target}: wrote ${bytesWritten} of ${(chunk as Buffer).length} bytes`);
      }
    }
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/**
 * Cuts a sealed landing file of more than `maxLines` lines into parts of equal line counts, at
 * most `maxLines` each, and removes it; a smaller file is left as it is. Returns how many parts
 * were written (0 when the file stayed whole).
 *
 * A crash leaves the file whole or its parts complete: every part is written and synced under a
 * name ingest ignores, all are renamed, and only then is the file removed. Cut off before that,
 * the file is still there and sorts before its parts, so it is split again, into the same parts
 * under the same names, before any of them is ingested.
 */
export async function splitSealedFile(path: string, maxLines: number): Promise<number> {
  return (await splitInParts(path, await lineEnds(path), maxLines)).length;
}

/**
 * Cuts a sealed file of two lines or more into two parts, as `splitSealedFile` does, and answers
 * their paths in order; a file of one line stays whole and answers none. Ingest halves a file
 * whose batch fails to find the lines that fail it.
 */
export async function halveSealedFile(path: string): Promise<string[]> {
  const ends = await lineEnds(path);
  return splitInParts(path, ends, Math.ceil(ends.length / 2));
}

async function splitInParts(path: string, ends: number[], maxLines: number): Promise<string[]> {
  if (ends.length <= maxLines) return [];
  const linesPerPart = Math.ceil(ends.length / Math.ceil(ends.length / maxLines));
  const parts = Math.ceil(ends.length / linesPerPart);
  await removeUnfinishedParts(path);
  let start = 0;
  for (let part = 1; part <= parts; part++) {
    const end = ends[Math.min(part * linesPerPart, ends.length) - 1] as number;
    await copyRange(path, start, end, partPath(path, part, PART_WRITING_SUFFIX));
    start = end;
  }
  const sealed: string[] = [];
  for (let part = 1; part <= parts; part++) {
    sealed.push(partPath(path, part, SEALED_SUFFIX));
    await rename(partPath(path, part, PART_WRITING_SUFFIX), partPath(path, part, SEALED_SUFFIX));
  }
  await syncDirectory(dirname(path));
  await rm(path);
  await syncDirectory(dirname(path));
  return sealed;
}
