import { createHash, createHmac } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { z } from 'zod';

/** Written last into a backup's folder: a folder without it is not a finished backup. */
export const MANIFEST_FILE = 'manifest.json';
/** The database's name in a backup, as in a data dir. */
export const BACKUP_DATABASE = 'cds.duckdb';
/** The master key's name in a backup made `--with-key`, as in a data dir. */
export const BACKUP_MASTER_KEY = 'master.key';
export const BACKUP_CONFIG = 'cds.config.json';
export const BACKUP_LANDING = 'landing';
export const BACKUP_QUARANTINE = 'quarantine';

const MANIFEST_FORMAT = 1;

const backupFileSchema = z.object({
  /** Relative to the backup's folder, with `/` between folders. */
  path: z.string().min(1),
  bytes: z.number().int().min(0),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
});
export type BackupFile = z.infer<typeof backupFileSchema>;

export const manifestSchema = z.object({
  format: z.literal(MANIFEST_FORMAT),
  cds_version: z.string(),
  /** The newest migration the database has: a cds that knows fewer refuses to restore it. */
  schema_version: z.number().int().min(0),
  created_at: z.string(),
  /** Whether `master.key` is in the backup; without it, the key must be kept elsewhere. */
  with_key: z.boolean(),
  /** Tells the right master key from another without holding it (`keyCheck`). */
  key_check: z.string().regex(/^[0-9a-f]{64}$/),
  files: z.array(backupFileSchema),
});
export type Manifest = z.infer<typeof manifestSchema>;

export function newManifest(fields: Omit<Manifest, 'format'>): Manifest {
  return { format: MANIFEST_FORMAT, ...fields };
}

/**
 * An HMAC of a fixed label under the master key: equal for the same key, and says nothing of it.
 * Restore compares it with the key it will use, so a backup is never put beside a key that
 * cannot open its identifiers.
 */
export function keyCheck(masterKey: Buffer): string {
  return createHmac('sha256', masterKey).update('cds backup key check').digest('hex');
}

/** Size and SHA-256 of the file at `path`, read once. */
export function digestFile(path: string): Promise<{ bytes: number; sha256: string }> {
  return new Promise((resolve, reject) => {
    const hash = createHash('sha256');
    let bytes = 0;
    createReadStream(path, { highWaterMark: 1024 * 1024 })
      .on('data', (chunk: string | Buffer) => {
        bytes += chunk.length;
        hash.update(chunk);
      })
      .on('error', reject)
      .on('end', () => resolve({ bytes, sha256: hash.digest('hex') }));
  });
}
