import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ValidationError } from '../errors.js';

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

function readOrCreateMasterKey(path: string): Buffer {
  try {
    return Buffer.from(readFileSync(path));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(MASTER_KEY_BYTES);
  // 'wx' so that two processes starting together cannot both create a different key.
  try {
    writeFileSync(path, key, { mode: 0o600, flag: 'wx' });
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return Buffer.from(readFileSync(path));
    throw error;
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
