import type { Store } from '../store/database.js';

/** Told the tenant whose access changed: a token revoked, or the tenant's rows removed. */
export type AccessChangeListener = (tenantId: string) => void;

/**
 * Who listens for changes that may take access away, per store: in-process only, so an answer
 * held open (a live stream) checks its token again at once instead of at its next message. Every
 * change of a store's tokens or tenants is made by the process that holds it (the CLI reaches a
 * running server through its API), so nothing is missed across processes.
 */
const listeners = new WeakMap<Store, Set<AccessChangeListener>>();

/** Called after the change commits (never inside its transaction), so a check then sees it. */
export function announceAccessChange(store: Store, tenantId: string): void {
  for (const listener of [...(listeners.get(store) ?? [])]) listener(tenantId);
}

/** Listens for the access changes of `store`; the answer stops listening. */
export function listenForAccessChanges(store: Store, listener: AccessChangeListener): () => void {
  let current = listeners.get(store);
  if (current === undefined) {
    current = new Set();
    listeners.set(store, current);
  }
  current.add(listener);
  return () => current.delete(listener);
}
