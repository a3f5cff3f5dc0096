import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { ValidationError } from '../errors.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './file-modes.js';

export interface DataDir {
  root: string;
  databasePath: string;
  landingDir: string;
  registryPath: string;
  masterKey: Buffer;
}

const MASTER_KEY_BYTES = 32;

function parseMasterKey(text: string, origin: string): Buffer {
  const trimmed = text.trim();
  const key = /^[0-9a-f]{64}$/i.test(trimmed)
    ? Buffer.from(trimmed, 'hex')
    : Buffer.from(trimmed, 'base64');
  if (key.length !== MASTER_KEY_BYTES) {
    throw ValidationError.field(
      origin,
      'the master key must be 32 bytes, as 64 hex digits or base64',
    );
  }
  return key;
}

/**
 * The key is on disk, name and bytes, before anything is encrypted with it: a power cut soon
 * after the first start must not leave committed ciphertext whose key was still in the page cache.
 */
function writeNewFileDurably(path: string, bytes: Buffer): void {
  const file = openSync(path, 'wx', PRIVATE_FILE_MODE);
  try {
    if (writeSync(file, bytes) !== bytes.length) throw new Error(`${path}: short write`);
    fsyncSync(file);
  } finally {
    closeSync(file);
  }
  const folder = openSync(dirname(path), 'r');
  try {
    fsyncSync(folder);
  } finally {
    closeSync(folder);
  }
}

function readOrCreateMasterKey(path: string): Buffer {
  try {
    return Buffer.from(readFileSync(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(MASTER_KEY_BYTES);
  // 'wx' so that two processes starting together cannot both create a different key.
  try {
    writeNewFileDurably(path, key);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return Buffer.from(readFileSync(path));
    throw error;
  }
}

/**
 * A data dir that others may enter was made before cds kept its files private: every folder in it
 * becomes 0700 and every file 0600, once, since the root is private afterwards. Symbolic links are
 * left alone (chmod would follow them out of the data dir); cds makes none.
 */
function makePrivate(root: string): void {
  if ((statSync(root).mode & 0o077) === 0) return;
  try {
    for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
      const path = join(entry.parentPath, entry.name);
      if (entry.isDirectory()) chmodSync(path, PRIVATE_DIR_MODE);
      else if (entry.isFile()) chmodSync(path, PRIVATE_FILE_MODE);
    }
    chmodSync(root, PRIVATE_DIR_MODE);
  } catch (error) {
    throw ValidationError.field(
      'data_dir',
      `${root} is open to other users and could not be made private (${(error as Error).message}); make it 0700, its files 0600, or use another data dir`,
    );
  }
}

/** Creates the data directory of design §2 on first use and returns its paths and master key. */
export function openDataDir(root: string, masterKeyOverride?: string): DataDir {
  mkdirSync(root, { recursive: true, mode: PRIVATE_DIR_MODE });
  makePrivate(root);
  const landingDir = join(root, 'landing');
  mkdirSync(landingDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const masterKey = masterKeyOverride
    ? parseMasterKey(masterKeyOverride, 'CDS_MASTER_KEY')
    : readOrCreateMasterKey(join(root, 'master.key'));
  if (masterKey.length !== MASTER_KEY_BYTES) {
    throw ValidationError.field('master.key', 'the master key file must hold exactly 32 bytes');
  }
  return {
    root,
    databasePath: join(root, 'cds.duckdb'),
    landingDir,
    registryPath: join(root, 'registry.json'),
    masterKey,
  };
}
