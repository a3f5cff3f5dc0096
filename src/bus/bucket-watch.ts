import type { KV, KvWatchEntry } from '@nats-io/kv';
import { componentLog } from '../telemetry/log.js';

/** What a watcher is told of one key: its new value, or that it is gone. */
export type BucketChange =
  | { key: string; revision: number; deleted: false; entry: KvWatchEntry }
  | { key: string; revision: number; deleted: true };

export interface BucketWatch {
  /** Resolves once every value the bucket held at the start was delivered. */
  readonly loaded: Promise<void>;
  stop(): void;
}

/**
 * Watches the keys of a bucket that match `key` (a subject pattern such as `tenant.>`): the last
 * value of each first, then every change, each in revision order. The watch is an ordered
 * consumer, which the client re-creates by itself across a node's fail-over. A change the
 * callback throws on is logged and skipped: one bad entry must not stop the others.
 * `outside` counts the bucket's values the pattern does not match (the registry's `bus-key`).
 */
export async function watchBucket(
  kv: KV,
  key: string,
  onChange: (change: BucketChange) => void,
  outside: () => Promise<number> = async () => 0,
): Promise<BucketWatch> {
  const log = componentLog('bus');
  // An empty bucket delivers nothing, so nothing marks the end of loading: its count says so,
  // less the values of keys outside the pattern that share the bucket.
  const initialCount = (await kv.status()).values - (await outside());
  let markLoaded!: () => void;
  const loaded = new Promise<void>((resolve) => {
    markLoaded = resolve;
  });
  // Below 0 when a value outside the pattern came between the two counts.
  if (initialCount <= 0) markLoaded();
  const watcher = await kv.watch({ key });
  (async () => {
    for await (const entry of watcher) {
      try {
        if (entry.operation === 'PUT')
          onChange({ key: entry.key, revision: entry.revision, deleted: false, entry });
        else onChange({ key: entry.key, revision: entry.revision, deleted: true });
      } catch (error) {
        log.error(
          { err: error, key: entry.key, bucket: entry.bucket },
          'a bucket entry could not be applied; skipped',
        );
      }
      if (!entry.isUpdate && (entry.delta ?? 0) === 0) markLoaded();
      if (entry.isUpdate) markLoaded();
    }
  })().catch((error: unknown) => log.error({ err: error }, 'a bucket watch ended'));
  return { loaded, stop: () => watcher.stop() };
}
