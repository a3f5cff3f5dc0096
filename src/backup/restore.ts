import { existsSync, statSync } from 'node:fs';
import { chmod, copyFile, mkdir, readFile, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, resolve, sep } from 'node:path';
import { replaceFileAtomically } from '../durable-write.js';
import { DatabaseTooNewError, RestoreRefusedError, StoreLockedError } from '../errors.js';
import { DATABASE_FILE, parseMasterKey } from '../store/data-dir.js';
import { ensureNotHeld } from '../store/database.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/file-modes.js';
import { DATA_DIR_SNAPSHOT } from '../store/snapshot.js';
import { migrations } from '../store/sql-files.js';
import {
  BACKUP_CONFIG,
  BACKUP_DATABASE,
  BACKUP_LANDING,
  BACKUP_MASTER_KEY,
  BACKUP_QUARANTINE,
  type BackupFile,
  digestFile,
  keyCheck,
  MANIFEST_FILE,
  type Manifest,
  manifestSchema,
} from './manifest.js';

export interface RestoreOptions {
  /** The backup's folder. */
  from: string;
  /** The data dir to restore into. */
  dataDir: string;
  /** Replace the database (and its landing lines) a data dir holds already. */
  force: boolean;
  /** `CDS_MASTER_KEY`, which wins over any `master.key` when the restored data dir is opened. */
  masterKeyOverride?: string;
}

export interface RestoreResult {
  data_dir: string;
  manifest: Manifest;
  /** Whether the backup's master key was written into the data dir. */
  key_restored: boolean;
}

async function readManifest(from: string): Promise<Manifest> {
  const path = join(from, MANIFEST_FILE);
  const text = await readFile(path, 'utf8').catch(() => null);
  if (text === null) {
    throw new RestoreRefusedError(
      `${from} holds no ${MANIFEST_FILE}: it is not a cds backup, or one cut off before it finished`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new RestoreRefusedError(`${path} is not JSON: the backup is damaged`);
  }
  const manifest = manifestSchema.safeParse(parsed);
  if (!manifest.success) {
    throw new RestoreRefusedError(`${path} is not a cds backup manifest: the backup is damaged`);
  }
  return manifest.data;
}

/** A manifest's path inside the backup, refused if it would lead out of it. */
function insideBackup(from: string, file: BackupFile): string {
  const path = normalize(file.path);
  if (isAbsolute(path) || path === '..' || path.startsWith(`..${sep}`)) {
    throw new RestoreRefusedError(`${MANIFEST_FILE} names ${file.path}, outside the backup`);
  }
  return join(from, path);
}

/** Every file the manifest names is there with its size and SHA-256. */
async function verifyFiles(from: string, manifest: Manifest): Promise<void> {
  for (const file of manifest.files) {
    const digest = await digestFile(insideBackup(from, file)).catch(() => null);
    if (!digest) {
      throw new RestoreRefusedError(`${file.path} is missing from the backup in ${from}`);
    }
    if (digest.bytes !== file.bytes || digest.sha256 !== file.sha256) {
      throw new RestoreRefusedError(
        `${file.path} in ${from} does not match its size and SHA-256 in ${MANIFEST_FILE}: the backup is damaged; restore another`,
      );
    }
  }
  if (!manifest.files.some((file) => file.path === BACKUP_DATABASE)) {
    throw new RestoreRefusedError(`${MANIFEST_FILE} in ${from} names no ${BACKUP_DATABASE}`);
  }
}

/**
 * The master key the restored data dir will open with, checked against the one the backup was
 * made with: identifiers are sealed with it, so profiles without it are unreadable. Answers the
 * backup's key when it is to be written into the data dir.
 */
async function keyToRestore(options: RestoreOptions, manifest: Manifest): Promise<Buffer | null> {
  const matches = (key: Buffer) => keyCheck(key) === manifest.key_check;
  const environmentKey = options.masterKeyOverride
    ? parseMasterKey(options.masterKeyOverride, 'CDS_MASTER_KEY')
    : null;
  if (environmentKey && !matches(environmentKey)) {
    throw new RestoreRefusedError(
      'CDS_MASTER_KEY is another master key than the one the backup was made with; unset it or set it to that key',
    );
  }
  const keyPath = join(options.dataDir, 'master.key');
  const presentKey = existsSync(keyPath) ? await readFile(keyPath) : null;
  if (manifest.with_key) {
    const backupKey = await readFile(join(options.from, BACKUP_MASTER_KEY));
    if (!presentKey || presentKey.equals(backupKey)) return presentKey ? null : backupKey;
    if (!options.force) {
      throw new RestoreRefusedError(
        `${keyPath} is another master key than the backup's; restore into another data dir, or add --force to replace it with the backup's`,
      );
    }
    return backupKey;
  }
  if (environmentKey) return null;
  if (!presentKey) {
    throw new RestoreRefusedError(
      `the backup holds no master key (it was made without --with-key): copy the master.key of the data dir it came from to ${keyPath}, or set CDS_MASTER_KEY, and restore again`,
    );
  }
  if (!matches(presentKey)) {
    throw new RestoreRefusedError(
      `${keyPath} is another master key than the one the backup was made with; put that key there, or set CDS_MASTER_KEY to it`,
    );
  }
  return null;
}

/** Copies `source` to `target` as a private file, written beside it and renamed into place. */
async function copyPrivate(source: string, target: string): Promise<void> {
  await mkdir(dirname(target), { recursive: true, mode: PRIVATE_DIR_MODE });
  await replaceFileAtomically(target, async (temporary) => {
    await copyFile(source, temporary);
    await chmod(temporary, PRIVATE_FILE_MODE);
  });
}

/**
 * Restores a backup written by `writeBackup` into a data dir. Refused, before anything is
 * written, when the backup is unfinished or damaged (sizes and SHA-256 of `manifest.json`), from
 * a newer schema than this cds knows, without the master key it needs, or when the data dir holds
 * a database already (unless `force`, and never while a process holds it). The database is put in
 * place last, so a data dir with a database is a finished restore.
 */
export async function restoreBackup(options: RestoreOptions): Promise<RestoreResult> {
  const from = resolve(options.from);
  const dataDir = resolve(options.dataDir);
  const manifest = await readManifest(from);
  const newestKnown = Math.max(0, ...migrations().map((migration) => migration.version));
  if (manifest.schema_version > newestKnown) {
    throw new DatabaseTooNewError(
      join(from, BACKUP_DATABASE),
      manifest.schema_version,
      newestKnown,
    );
  }
  await verifyFiles(from, manifest);
  if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
    throw new RestoreRefusedError(`${dataDir} is not a folder; name a data dir to restore into`);
  }
  const databasePath = join(dataDir, DATABASE_FILE);
  if (existsSync(databasePath)) {
    if (!options.force) {
      throw new RestoreRefusedError(
        `${dataDir} holds a database already; restore into a new data dir, or add --force to replace it`,
      );
    }
    await ensureNotHeld(databasePath).catch((error: unknown) => {
      if (!(error instanceof StoreLockedError)) throw error;
      const who = error.holder
        ? `process ${error.holder.pid} (${error.holder.command})`
        : 'another process';
      throw new RestoreRefusedError(
        `${databasePath} is held by ${who}; stop it before restoring over it`,
      );
    });
  }
  const key = await keyToRestore({ ...options, from, dataDir }, manifest);

  await mkdir(dataDir, { recursive: true, mode: PRIVATE_DIR_MODE });
  if (options.force) {
    // What belonged to the database being replaced: its log, its lines, and what is derived
    // from it (the owner writes registry.json again when it starts).
    for (const name of [
      `${DATABASE_FILE}.wal`,
      BACKUP_LANDING,
      BACKUP_QUARANTINE,
      'registry.json',
      DATA_DIR_SNAPSHOT,
    ]) {
      await rm(join(dataDir, name), { recursive: true, force: true });
    }
  }
  if (key) await copyPrivate(join(from, BACKUP_MASTER_KEY), join(dataDir, 'master.key'));
  for (const file of manifest.files) {
    const isLines =
      file.path.startsWith(`${BACKUP_LANDING}/`) || file.path.startsWith(`${BACKUP_QUARANTINE}/`);
    const keepsPresent = file.path === BACKUP_CONFIG && existsSync(join(dataDir, BACKUP_CONFIG));
    if (isLines || (file.path === BACKUP_CONFIG && !keepsPresent)) {
      await copyPrivate(insideBackup(from, file), join(dataDir, normalize(file.path)));
    }
  }
  await rm(`${databasePath}.wal`, { force: true });
  // Its folder is synced with it, so the log's removal is on disk too.
  await copyPrivate(join(from, BACKUP_DATABASE), databasePath);
  return { data_dir: dataDir, manifest, key_restored: key !== null };
}
