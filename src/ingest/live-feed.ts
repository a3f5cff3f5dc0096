import type { Store } from '../store/database.js';
import { storeNotices } from '../store/store-notices.js';

/** The newest `recent_events` row a committed batch added in one workspace. */
export interface WorkspaceAdvance {
  tenant_id: string;
  workspace_id: string;
  last_seq: number;
}

export type AdvanceListener = (advance: WorkspaceAdvance) => void;

/**
 * Committed batches, per store: in-process only, so a live stream learns of new rows without
 * reading the database until there is something to read.
 */
const committedBatches = storeNotices<WorkspaceAdvance>();

/** Called by the ingest code after a batch commits (never inside its transaction). */
export function announceCommitted(store: Store, advances: readonly WorkspaceAdvance[]): void {
  for (const advance of advances) committedBatches.announce(store, advance);
}

/** Listens for the batches committed to `store`; the answer stops listening. */
export function listenForAdvances(store: Store, listener: AdvanceListener): () => void {
  return committedBatches.listen(store, listener);
}
