import { existsSync, statSync } from 'node:fs';
import { chmod, copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, sep } from 'node:path';
import { type Context, nowIso } from '../context.js';
import { writeFileAtomically } from '../durable-write.js';
import { ConflictError, ValidationError } from '../errors.js';
import { OPEN_SUFFIX, SEALED_SUFFIX } from '../landing-format.js';
import { quarantineDir } from '../quarantine/quarantine.js';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../store/file-modes.js';
import { packageVersion } from '../version.js';
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
  newManifest,
} from './manifest.js';

/** The longest file name Linux file systems take, in bytes. */
const MAX_FILE_NAME_BYTES = 255;

/** What an open landing file's complete lines are called in a backup, beside the sealed ones. */
const OPEN_COPY_SUFFIX = `-open${SEALED_SUFFIX}`;

/**
 * The folder a backup is written into: named absolutely (it is a path on the server's machine,
 * whatever the caller's folder), and new or empty. Answers whether it exists already.
 */
async function checkTarget(dir: string): Promise<boolean> {
  if (dir.includes('\0')) {
    throw ValidationError.field('dir', 'holds a NUL byte, which no file name can');
  }
  if (!isAbsolute(dir)) {
    throw ValidationError.field('dir', 'must be an absolute path on the server');
  }
  if (existsSync(dir)) {
    if (!statSync(dir).isDirectory()) throw ValidationError.field('dir', `${dir} is not a folder`);
    if ((await readdir(dir)).length > 0) {
      throw new ConflictError(`${dir} is not empty; name a new or empty folder for the backup`);
    }
    return true;
  }
  if (Buffer.byteLength(basename(dir)) > MAX_FILE_NAME_BYTES) {
    throw ValidationError.field('dir', `has a name longer than ${MAX_FILE_NAME_BYTES} bytes`);
  }
  const parent = dirname(dir);
  if (!existsSync(parent) || !statSync(parent).isDirectory()) {
    throw ValidationError.field('dir', `the folder ${parent} does not exist`);
  }
  return false;
}

/** `dir/relativePath` with its folders made private; the path as a manifest names it. */
async function destination(dir: string, relativePath: string): Promise<string> {
  const path = join(dir, relativePath);
  await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
  return path;
}

const manifestPath = (relativePath: string) => relativePath.split(sep).join('/');

async function recordFile(dir: string, relativePath: string): Promise<BackupFile> {
  await chmod(join(dir, relativePath), PRIVATE_FILE_MODE);
  return { path: manifestPath(relativePath), ...(await digestFile(join(dir, relativePath))) };
}

/** A file that is gone by the time it is read was taken meanwhile (ingested, retried): skipped. */
async function unlessGone<T>(work: Promise<T>): Promise<T | null> {
  try {
    return await work;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath, entry.name)))
    .sort();
}

/**
 * Landing lines not yet ingested: sealed files as they are, and the complete lines of open ones
 * (a collector may be writing the last) as a sealed file beside them, so that the restored data
 * dir ingests every line acknowledged before the backup began.
 */
async function copyLanding(context: Context, dir: string): Promise<BackupFile[]> {
  const root = context.dataDir.landingDir;
  const files: BackupFile[] = [];
  for (const name of await filesUnder(root)) {
    if (name.endsWith(SEALED_SUFFIX)) {
      const target = join(BACKUP_LANDING, name);
      const copied = await unlessGone(
        destination(dir, target).then((path) => copyFile(join(root, name), path)),
      );
      if (copied !== null) files.push(await recordFile(dir, target));
    } else if (name.endsWith(OPEN_SUFFIX)) {
      const bytes = await unlessGone(readFile(join(root, name)));
      const complete = bytes?.subarray(0, bytes.lastIndexOf(0x0a) + 1);
      if (!complete?.length) continue;
      const target = join(BACKUP_LANDING, name.slice(0, -OPEN_SUFFIX.length) + OPEN_COPY_SUFFIX);
      await writeFile(await destination(dir, target), complete, { mode: PRIVATE_FILE_MODE });
      files.push(await recordFile(dir, target));
    }
  }
  return files;
}

/** Quarantined lines and their records, except those `skip` already holds. */
async function copyQuarantine(
  context: Context,
  dir: string,
  skip: ReadonlySet<string>,
): Promise<BackupFile[]> {
  const root = quarantineDir(context.dataDir);
  const files: BackupFile[] = [];
  for (const name of await filesUnder(root)) {
    const target = join(BACKUP_QUARANTINE, name);
    if (skip.has(manifestPath(target))) continue;
    const copied = await unlessGone(
      destination(dir, target).then((path) => copyFile(join(root, name), path)),
    );
    if (copied !== null) files.push(await recordFile(dir, target));
  }
  return files;
}

/**
 * Writes a backup of the data dir into `dir` (a new or empty folder) while the store goes on
 * serving: the database as of one moment, the landing and quarantined lines not yet in it, the
 * configuration file, and the master key when `withKey`. `manifest.json` is written last, with
 * each file's size and SHA-256: a folder without it is an unfinished backup, and restore refuses
 * it. On failure the folder is emptied again.
 */
export async function writeBackup(
  context: Context,
  dir: string,
  options: { withKey: boolean },
): Promise<{ dir: string; manifest: Manifest }> {
  const reuseEmpty = await checkTarget(dir);
  if (reuseEmpty) await chmod(dir, PRIVATE_DIR_MODE);
  else await mkdir(dir, { mode: PRIVATE_DIR_MODE });
  try {
    // Lines before the database: a landing file ingested meanwhile is then in the backup's
    // database or in its landing folder (or both, which ingest counts as duplicates), never in
    // neither. Quarantine twice, around landing, for files moved between the two meanwhile.
    const files = await copyQuarantine(context, dir, new Set());
    files.push(...(await copyLanding(context, dir)));
    files.push(...(await copyQuarantine(context, dir, new Set(files.map((file) => file.path)))));
    const config = join(context.dataDir.root, BACKUP_CONFIG);
    if ((await unlessGone(copyFile(config, join(dir, BACKUP_CONFIG)))) !== null) {
      files.push(await recordFile(dir, BACKUP_CONFIG));
    }
    const databasePath = join(dir, BACKUP_DATABASE);
    const schemaVersion = await context.store.copyTo(databasePath, async (session) => {
      const row = await session.one<{ schema_version: number }>('store_schema_version');
      return row?.schema_version ?? 0;
    });
    await rm(`${databasePath}.wal`, { force: true });
    files.push(await recordFile(dir, BACKUP_DATABASE));
    if (options.withKey) {
      await writeFileAtomically(
        join(dir, BACKUP_MASTER_KEY),
        context.dataDir.masterKey,
        PRIVATE_FILE_MODE,
      );
      files.push(await recordFile(dir, BACKUP_MASTER_KEY));
    }
    const manifest = newManifest({
      cds_version: packageVersion(),
      schema_version: schemaVersion,
      created_at: nowIso(context),
      with_key: options.withKey,
      key_check: keyCheck(context.dataDir.masterKey),
      files,
    });
    // Last, and synced with the folder: a backup with a manifest is a finished one.
    await writeFileAtomically(
      join(dir, MANIFEST_FILE),
      `${JSON.stringify(manifest, null, 2)}\n`,
      PRIVATE_FILE_MODE,
    );
    return { dir, manifest };
  } catch (error) {
    const entries = await readdir(dir).catch(() => []);
    await Promise.all(entries.map((name) => rm(join(dir, name), { recursive: true, force: true })));
    if (!reuseEmpty) await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
