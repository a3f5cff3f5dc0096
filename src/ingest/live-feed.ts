import type { Store } from '../store/database.js';

/** The newest `recent_events` row a committed batch added in one workspace. */
export interface WorkspaceAdvance {
  tenant_id: string;
  workspace_id: string;
  last_seq: number;
}

export type AdvanceListener = (advance: WorkspaceAdvance) => void;

/**
 * Who listens for committed batches, per store: in-process only, so a live stream learns of new
 * rows without reading the database until there is something to read. Keyed by the store, since a
 * process may hold several (a cluster owner per shard, tests).
 */
const listeners = new WeakMap<Store, Set<AdvanceListener>>();

/** Called by the ingest code after a batch commits (never inside its transaction). */
export function announceCommitted(store: Store, advances: readonly WorkspaceAdvance[]): void {
  const current = listeners.get(store);
  if (current === undefined || advances.length === 0) return;
  for (const listener of [...current]) {
    for (const advance of advances) listener(advance);
  }
}

/** Listens for the batches committed to `store`; the answer stops listening. */
export function listenForAdvances(store: Store, listener: AdvanceListener): () => void {
  let current = listeners.get(store);
  if (current === undefined) {
    current = new Set();
    listeners.set(store, current);
  }
  current.add(listener);
  return () => current.delete(listener);
}
