import type { Store } from './database.js';

/** Hears a notice about one store. */
export type NoticeListener<T> = (notice: T) => void;

export interface StoreNotices<T> {
  /** Tells every listener of `store`; called after the change commits, never inside it. */
  announce(store: Store, notice: T): void;
  /** Listens for the notices of `store`; the answer stops listening. */
  listen(store: Store, listener: NoticeListener<T>): () => void;
}

/**
 * In-process notices about what committed to a store, keyed by the store since a process may
 * hold several (an owner per shard, tests): a waiting reader learns of a change without polling
 * the database. A listener that stops listening while others are told is not told.
 */
export function storeNotices<T>(): StoreNotices<T> {
  const listeners = new WeakMap<Store, Set<NoticeListener<T>>>();
  return {
    announce(store, notice) {
      for (const listener of [...(listeners.get(store) ?? [])]) listener(notice);
    },
    listen(store, listener) {
      let current = listeners.get(store);
      if (current === undefined) {
        current = new Set();
        listeners.set(store, current);
      }
      current.add(listener);
      return () => current.delete(listener);
    },
  };
}
