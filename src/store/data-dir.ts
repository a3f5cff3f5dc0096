import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { StoreUnavailableError, ValidationError } from '../errors.js';
import { storageFaultOf } from './storage-fault.js';

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
  const file = openSync(path, 'wx', 0o600);
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
    // Nothing was encrypted with it yet. Left short (a full disk), it would stop every later
    // start with "must hold exactly 32 bytes" once there is room again.
    unlinkSync(path);
    const fault = storageFaultOf(error);
    throw fault ? StoreUnavailableError.atOpen(path, fault.cause) : error;
  }
}

/** Creates the data directory of design §2 on first use and returns its paths and master key. */
export function openDataDir(root: string, masterKeyOverride?: string): DataDir {
  mkdirSync(root, { recursive: true });
  const landingDir = join(root, 'landing');
  mkdirSync(landingDir, { recursive: true });
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
