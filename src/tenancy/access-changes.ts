import type { Store } from '../store/database.js';
import { storeNotices } from '../store/store-notices.js';

/** Told the tenant whose access changed: a token revoked, or the tenant's rows removed. */
export type AccessChangeListener = (tenantId: string) => void;

/**
 * Changes that may take access away, per store: in-process only, so an answer held open (a live
 * stream) checks its token again at once instead of at its next message. Every change of a
 * store's tokens or tenants is made by the process that holds it (the CLI reaches a running
 * server through its API), so nothing is missed across processes.
 */
const accessChanges = storeNotices<string>();

/** Called after the change commits (never inside its transaction), so a check then sees it. */
export function announceAccessChange(store: Store, tenantId: string): void {
  accessChanges.announce(store, tenantId);
}

/** Listens for the access changes of `store`; the answer stops listening. */
export function listenForAccessChanges(store: Store, listener: AccessChangeListener): () => void {
  return accessChanges.listen(store, listener);
}
