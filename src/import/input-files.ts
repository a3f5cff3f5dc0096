import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { access, open, readdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { NotFoundError } from '../errors.js';

/** One file of history to import, as found on disk. */
export interface InputFile {
  path: string;
  /** Its size on disk (compressed, for a gzip file): what the progress line measures. */
  bytes: number;
}

/**
 * What a folder's import takes: NDJSON under any of its usual names, each maybe gzipped, and a
 * bare `.gz` (Segment's S3 export names its files `<time>.<uuid>.gz`).
 */
const IMPORTED_NAME = /\.(ndjson|jsonl|json)(\.gz)?$|\.gz$/;

/** No event a collector takes is larger than 32 KiB; a Segment message no larger than that either. */
export const MAX_LINE_BYTES = 1024 * 1024;

function unreadable(path: string, error: unknown): NotFoundError {
  const code = (error as NodeJS.ErrnoException).code;
  const why =
    code === 'ENOENT'
      ? 'does not exist'
      : code === 'EACCES' || code === 'EPERM'
        ? 'cannot be read (permission denied)'
        : `cannot be read (${code ?? (error as Error).message})`;
  return new NotFoundError(`${path} ${why}`);
}

async function readable(path: string): Promise<void> {
  await access(path, constants.R_OK).catch((error: unknown) => {
    throw unreadable(path, error);
  });
}

/**
 * The files `target` names: itself, or every importable file under the folder (hidden ones
 * left out), in path order. Each must be readable, so an import never stops half-way on one
 * that is not.
 */
export async function findInputFiles(target: string): Promise<InputFile[]> {
  const root = resolve(target);
  const info = await stat(root).catch((error: unknown) => {
    throw unreadable(target, error);
  });
  if (info.isFile()) {
    await readable(root);
    return [{ path: root, bytes: info.size }];
  }
  if (!info.isDirectory()) throw new NotFoundError(`${target} is neither a file nor a folder`);
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(
    (error: unknown) => {
      throw unreadable(target, error);
    },
  );
  const paths = entries
    .filter((entry) => entry.isFile() && IMPORTED_NAME.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter(
      (path) =>
        !path
          .slice(root.length)
          .split('/')
          .some((part) => part.startsWith('.')),
    )
    .sort();
  if (paths.length === 0) {
    throw new NotFoundError(
      `${target} holds no file to import (names ending .ndjson, .jsonl, .json, or any of them .gz)`,
    );
  }
  const files: InputFile[] = [];
  for (const path of paths) {
    await readable(path);
    files.push({ path, bytes: (await stat(path)).size });
  }
  return files;
}

/** Whether the file starts with gzip's magic bytes, whatever its name. */
async function isGzip(path: string): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const head = Buffer.alloc(2);
    const { bytesRead } = await handle.read(head, 0, 2, 0);
    return bytesRead === 2 && head[0] === 0x1f && head[1] === 0x8b;
  } finally {
    await handle.close();
  }
}

/** SHA-256 of the file's bytes as they are on disk: the input's identity. */
export function fileDigest(path: string): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const hash = createHash('sha256');
    createReadStream(path, { highWaterMark: 1024 * 1024 })
      .on('data', (chunk: string | Buffer) => hash.update(chunk))
      .on('error', reject)
      .on('end', () => resolvePromise(hash.digest('hex')));
  });
}

/** One line of an input file: its text, where it starts in the (decompressed) bytes, its number. */
export interface InputLine {
  /** Null for a line longer than `MAX_LINE_BYTES`, which is skipped unread. */
  text: string | null;
  offset: number;
  number: number;
  /**
   * How far into the file on disk the line is, for progress: its offset, or in a gzip file the
   * compressed bytes read when it was decompressed.
   */
  fileBytes: number;
}

/**
 * The file's lines, in batches, decompressed when it is gzip. Empty lines are passed over; a
 * line's `\r\n` ending is taken as `\n`.
 */
export async function* readLines(path: string): AsyncGenerator<InputLine[]> {
  const gzip = await isGzip(path);
  const raw = createReadStream(path, { highWaterMark: 1024 * 1024 });
  const stream: Readable = gzip ? raw.pipe(createGunzip()) : raw;
  if (gzip) raw.on('error', (error) => stream.destroy(error));
  try {
    for await (const lines of splitLines(stream as AsyncIterable<Buffer>)) {
      if (gzip) for (const line of lines) line.fileBytes = raw.bytesRead;
      yield lines;
    }
  } finally {
    raw.destroy();
    stream.destroy();
  }
}

/** `readLines`' splitting of a byte stream into numbered lines with their offsets. */
async function* splitLines(stream: AsyncIterable<Buffer>): AsyncGenerator<InputLine[]> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  /** Where the line being gathered starts. */
  let lineStart = 0;
  let consumed = 0;
  let number = 0;
  let tooLong = false;
  const lineOf = (bytes: Buffer): InputLine | null => {
    number += 1;
    const end =
      bytes.length > 0 && bytes[bytes.length - 1] === 0x0d ? bytes.length - 1 : bytes.length;
    if (tooLong) return { text: null, offset: lineStart, number, fileBytes: lineStart };
    if (end === 0) return null;
    return {
      text: bytes.toString('utf8', 0, end),
      offset: lineStart,
      number,
      fileBytes: lineStart,
    };
  };
  for await (const chunk of stream) {
    const lines: InputLine[] = [];
    let from = 0;
    for (let at = chunk.indexOf(0x0a); at >= 0; at = chunk.indexOf(0x0a, from)) {
      const piece = chunk.subarray(from, at);
      const whole = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
      const line = lineOf(whole);
      if (line) lines.push(line);
      pending = [];
      pendingBytes = 0;
      tooLong = false;
      lineStart = consumed + at + 1;
      from = at + 1;
    }
    if (from < chunk.length && !tooLong) {
      pending.push(chunk.subarray(from));
      pendingBytes += chunk.length - from;
      if (pendingBytes > MAX_LINE_BYTES) {
        tooLong = true;
        pending = [];
        pendingBytes = 0;
      }
    }
    consumed += chunk.length;
    if (lines.length > 0) yield lines;
  }
  if (pendingBytes > 0 || tooLong) {
    const line = lineOf(Buffer.concat(pending));
    if (line) yield [line];
  }
}

/** The first `count` lines of the file that are not empty, for telling its format. */
export async function firstLines(path: string, count: number): Promise<string[]> {
  const found: string[] = [];
  for await (const lines of readLines(path)) {
    for (const line of lines) {
      if (line.text !== null) found.push(line.text);
      if (found.length >= count) return found;
    }
  }
  return found;
}
