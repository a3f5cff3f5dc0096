import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { systemClock } from '../clock.js';
import { type ConfigInput, loadConfig } from '../config.js';
import type { Context } from '../context.js';
import { NotFoundError } from '../errors.js';
import { resumePurges } from '../privacy/erase.js';
import { DATABASE_FILE, openDataDir } from '../store/data-dir.js';
import { Store } from '../store/database.js';
import { KeyRing } from '../tenant-keys.js';

/**
 * Whether a command may start a new data dir (`tenants create`, `serve`, `demo`; `restore` writes
 * its own) or needs one that holds a database (every other command).
 */
export type DataDirUse = 'create' | 'existing';

/**
 * Refuses a data dir that holds no database. Made on the spot it would hold a new master key and
 * an empty store, and a mistyped `--data-dir` would answer "(none)" as if all were well.
 */
export function requireExistingDataDir(root: string): void {
  if (existsSync(join(root, DATABASE_FILE))) return;
  const what = existsSync(root)
    ? `data dir ${root} holds no cds database (${DATABASE_FILE})`
    : `data dir ${root} does not exist`;
  throw new NotFoundError(
    `${what}: point --data-dir (or CDS_DATA_DIR) at the one cds serve uses; cds tenants create, serve, demo and restore start a new one`,
  );
}

/**
 * Loads the configuration, creates the data directory if `use` allows and opens its database; an
 * erasure whose file rewrite a crash cut off is rewritten first, before any other write.
 */
export async function openContext(flags: ConfigInput, use: DataDirUse): Promise<Context> {
  const config = loadConfig(flags);
  if (use === 'existing') requireExistingDataDir(config.data_dir);
  const dataDir = openDataDir(config.data_dir, config.master_key);
  const store = await Store.open(dataDir.databasePath, {
    memoryLimit: config.memory_limit,
    checkpointThreshold: config.checkpoint_threshold,
  });
  const context = {
    store,
    config,
    dataDir,
    clock: systemClock,
    keyRing: new KeyRing(dataDir.masterKey),
  };
  await resumePurges(context);
  return context;
}
