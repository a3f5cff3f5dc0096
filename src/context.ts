import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { DataDir } from './store/data-dir.js';
import type { Store } from './store/database.js';
import type { KeyRing } from './tenant-keys.js';

/** What every service needs: the open store, the configuration and the clock. */
export interface Context {
  store: Store;
  config: Config;
  dataDir: DataDir;
  clock: Clock;
  /** Per-tenant identifier keys derived from the master key. */
  keyRing: KeyRing;
}

export function nowIso(context: Pick<Context, 'clock'>): string {
  return context.clock.now().toISOString();
}
