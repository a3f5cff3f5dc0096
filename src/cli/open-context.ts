import { systemClock } from '../clock.js';
import { type ConfigInput, loadConfig } from '../config.js';
import type { Context } from '../context.js';
import { KeyRing } from '../identity/tenant-keys.js';
import { openDataDir } from '../store/data-dir.js';
import { Store } from '../store/database.js';

/** Loads the configuration, creates the data directory if needed and opens its database. */
export async function openContext(flags: ConfigInput): Promise<Context> {
  const config = loadConfig(flags);
  const dataDir = openDataDir(config.data_dir, config.master_key);
  const store = await Store.open(dataDir.databasePath, { memoryLimit: config.memory_limit });
  return { store, config, dataDir, clock: systemClock, keyRing: new KeyRing(dataDir.masterKey) };
}
