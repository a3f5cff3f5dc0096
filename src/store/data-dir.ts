import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  unlinkSync,
} from 'node:fs';
import { join } from 'node:path';
import { createFileDurablySync } from '../durable-write.js';
import { StoreUnavailableError, ValidationError } from '../errors.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from './file-modes.js';
import { DATA_DIR_SNAPSHOT } from './snapshot.js';
import { storageFaultOf } from './storage-fault.js';

export interface DataDir {
  root: string;
  databasePath: string;
  landingDir: string;
  registryPath: string;
  masterKey: Buffer;
}

const MASTER_KEY_BYTES = 32;

export function parseMasterKey(text: string, origin: string): Buffer {
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

function readOrCreateMasterKey(path: string): Buffer {
  try {
    return Buffer.from(readFileSync(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(MASTER_KEY_BYTES);
  // Created exclusively, so that two processes starting together cannot both create a different
  // key; and on disk, name and bytes, before anything is encrypted with it: a power cut soon
  // after the first start must not leave committed ciphertext whose key was still in the page cache.
  try {
    createFileDurablySync(path, key, PRIVATE_FILE_MODE);
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

export const DATABASE_FILE = 'cds.duckdb';
export const REGISTRY_FILE = 'registry.json';

/** What cds keeps directly in the data dir, besides the landing folder. */
const TOP_LEVEL_FILES = [
  DATABASE_FILE,
  `${DATABASE_FILE}.wal`,
  REGISTRY_FILE,
  'master.key',
  DATA_DIR_SNAPSHOT,
];

/**
 * A data dir that others may enter was made before cds kept its files private. It becomes 0700,
 * which alone keeps others out; the files cds made in it become 0600 and the landing folders
 * 0700, once, since the root is private afterwards. Nothing else in it is touched (the data dir
 * may be a folder the user keeps other things in), and symbolic links are not followed.
 */
function makePrivate(root: string, landingDir: string): void {
  if ((statSync(root).mode & 0o077) === 0) return;
  try {
    chmodSync(root, PRIVATE_DIR_MODE);
    for (const name of TOP_LEVEL_FILES) {
      const path = join(root, name);
      if (existsSync(path) && lstatSync(path).isFile()) chmodSync(path, PRIVATE_FILE_MODE);
    }
    if (!existsSync(landingDir) || !lstatSync(landingDir).isDirectory()) return;
    chmodSync(landingDir, PRIVATE_DIR_MODE);
    for (const entry of readdirSync(landingDir, { recursive: true, withFileTypes: true })) {
      const path = join(entry.parentPath, entry.name);
      if (entry.isDirectory()) chmodSync(path, PRIVATE_DIR_MODE);
      else if (entry.isFile()) chmodSync(path, PRIVATE_FILE_MODE);
    }
  } catch (error) {
    throw ValidationError.field(
      'data_dir',
      `${root} is open to other users and could not be made private (${(error as Error).message}); make it 0700 and its files 0600, or use another data dir`,
    );
  }
}

/** Creates the data directory of design §2 on first use and returns its paths and master key. */
export function openDataDir(root: string, masterKeyOverride?: string): DataDir {
  mkdirSync(root, { recursive: true, mode: PRIVATE_DIR_MODE });
  const landingDir = join(root, 'landing');
  makePrivate(root, landingDir);
  mkdirSync(landingDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const masterKey = masterKeyOverride
    ? parseMasterKey(masterKeyOverride, 'CDS_MASTER_KEY')
    : readOrCreateMasterKey(join(root, 'master.key'));
  if (masterKey.length !== MASTER_KEY_BYTES) {
    throw ValidationError.field('master.key', 'the master key file must hold exactly 32 bytes');
  }
  return {
    root,
    databasePath: join(root, DATABASE_FILE),
    landingDir,
    registryPath: join(root, REGISTRY_FILE),
    masterKey,
  };
}
