import { open, readFile, rename, rm } from 'node:fs/promises';
import type { Store } from './database.js';
import { PRIVATE_FILE_MODE } from './file-modes.js';

/** A typed array a saved index holds. */
export type Section = Int32Array | Uint32Array | Uint16Array | Float64Array;
export type Sections = Record<string, Section>;

/** What an index saves: a JSON-able header of its own, and its typed arrays by name. */
export interface SavedIndex {
  header: unknown;
  sections: Sections;
}

const FORMAT = 1;
const SECTION_TYPES = { Int32Array, Uint32Array, Uint16Array, Float64Array } as const;
type SectionType = keyof typeof SECTION_TYPES;

interface FileHeader {
  format: number;
  header: unknown;
  sections: { name: string; type: SectionType; bytes: number }[];
}

/**
 * Where an in-memory index of a store is saved between processes: beside the database file,
 * so a copy of the data dir carries it and an erasure removes it with the rest
 * (`removeSavedIndexes`). Null for a store without a file.
 */
export function savedIndexPath(store: Store, name: string): string | null {
  return store.path === ':memory:' ? null : `${store.path}.${name}.index`;
}

/** Writes a saved index whole under a temporary name, then puts it in place. */
export async function writeSavedIndex(path: string, saved: SavedIndex): Promise<void> {
  const entries = Object.entries(saved.sections);
  const fileHeader: FileHeader = {
    format: FORMAT,
    header: saved.header,
    sections: entries.map(([name, array]) => ({
      name,
      type: array.constructor.name as SectionType,
      bytes: array.byteLength,
    })),
  };
  const headerBytes = Buffer.from(JSON.stringify(fileHeader));
  const length = Buffer.alloc(4);
  length.writeUInt32LE(headerBytes.length);
  const temporary = `${path}.${process.pid}.partial`;
  const file = await open(temporary, 'w', PRIVATE_FILE_MODE);
  try {
    await file.writev([
      length,
      headerBytes,
      ...entries.map(([, array]) => Buffer.from(array.buffer, array.byteOffset, array.byteLength)),
    ]);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
}

/** A saved index as written, or null when there is none or it cannot be read as one. */
export async function readSavedIndex(path: string): Promise<SavedIndex | null> {
  const bytes = await readFile(path).catch(() => null);
  if (bytes === null || bytes.length < 4) return null;
  const headerLength = bytes.readUInt32LE(0);
  let fileHeader: FileHeader;
  try {
    fileHeader = JSON.parse(bytes.subarray(4, 4 + headerLength).toString('utf8')) as FileHeader;
  } catch {
    return null;
  }
  if (fileHeader.format !== FORMAT) return null;
  const sections: Sections = {};
  let offset = 4 + headerLength;
  for (const { name, type, bytes: size } of fileHeader.sections) {
    const Type = SECTION_TYPES[type];
    if (!Type || offset + size > bytes.length || size % Type.BYTES_PER_ELEMENT !== 0) return null;
    // A copy: the file's bytes are not aligned for every type, and are freed once read.
    const copy = bytes.buffer.slice(bytes.byteOffset + offset, bytes.byteOffset + offset + size);
    sections[name] = new Type(copy);
    offset += size;
  }
  return offset === bytes.length ? { header: fileHeader.header, sections } : null;
}

/** The names of the indexes a store's process saves (src/ingest). */
export const SAVED_INDEXES = ['identifier', 'dedup'] as const;

/**
 * Removes every saved index of a store: an erasure does, as they hold the erased person's
 * pseudonymous keys and ids; the next process builds its indexes from the tables.
 */
export async function removeSavedIndexes(store: Store): Promise<void> {
  for (const name of SAVED_INDEXES) {
    const path = savedIndexPath(store, name);
    if (path) await rm(path, { force: true });
  }
}
