import type { Store } from '../store/database.js';
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
