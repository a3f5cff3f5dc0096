import type { Store } from '../store/database.js';
import { componentLog } from '../telemetry/log.js';
import { dedupIndexOf } from './dedup-index.js';
import { identifierIndexOf } from './identifier-index.js';

/**
 * Saves the store's in-memory indexes beside its database for the next process, which takes each
 * only if the tables still hold what it was saved from (docs/decisions.md, "Identifier index" and
 * "Dedup index"). Called once no batch runs: a one-shot ingest at its end, a loop as it stops.
 */
export async function saveIndexes(store: Store): Promise<void> {
  await store.read(async (session) => {
    await identifierIndexOf(store).save(session);
    await dedupIndexOf(store).save(session);
  });
}

/**
 * Loads the store's in-memory indexes (saved ones when in step, else built from the tables) while
 * no batch needs them yet, so that a process's first batch does not pay for them: started with a
 * loop, which waits for it at its first batch. A failure is logged; that batch loads them again.
 * Settles once both have ended either way (`cds serve` is not ready until then).
 */
export async function prepareIndexes(store: Store): Promise<void> {
  // Both asked for now: a batch starting meanwhile waits for both.
  await Promise.all(
    [identifierIndexOf(store), dedupIndexOf(store)].map((index) =>
      index.prepare(store).catch((error: unknown) => {
        componentLog('ingest').warn({ err: error }, 'loading an ingest index ahead failed');
      }),
    ),
  );
}
