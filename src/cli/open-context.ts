import { systemClock } from '../clock.js';
import { type ConfigInput, loadConfig } from '../config.js';
import type { Context } from '../context.js';
import { resumePurges } from '../privacy/erase.js';
import { openDataDir } from '../store/data-dir.js';
import { Store } from '../store/database.js';
import { KeyRing } from '../tenant-keys.js';

/**
 * Loads the configuration, creates the data directory if needed and opens its database; an
 * erasure whose file rewrite a crash cut off is rewritten first, before any other write.
 */
export async function openContext(flags: ConfigInput): Promise<Context> {
  const config = loadConfig(flags);
  const dataDir = openDataDir(config.data_dir, config.master_key);
  const store = await Store.open(dataDir.databasePath, { memoryLimit: config.memory_limit });
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
