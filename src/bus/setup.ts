import type { JetStreamManager, StreamConfig } from '@nats-io/jetstream';
import { type BusConnection, natsPackages } from './connect.js';
import { ALL_EVENTS, EVENTS_STREAM } from './subjects.js';

/**
 * The key-value buckets of a cluster (docs/cluster-design.md §6):
 * - `registry`: per tenant, what collectors check events against (its owner writes it);
 * - `shards`: per tenant, the shard that owns it (`cds shards`, and owners during a move);
 * - `owners`: per shard, the URL its owner answers on (forwarding);
 * - `collectors`: per collector, its last heartbeat (the share of the rate limits).
 */
export const BUCKETS = {
  registry: 'cds_registry',
  shards: 'cds_shards',
  owners: 'cds_owners',
  collectors: 'cds_collectors',
} as const;

/** What `cds bus init` sets; docs/scaling.md says how to size them. */
export interface StreamSizing {
  /** 3 on a cluster of three or more nodes: a copy on every node survives one node lost. */
  replicas: number;
  /** How long events stay: at least the backup interval plus the time to restore an owner. */
  maxAgeMs: number;
  /** Bytes each node may hold for the stream, oldest dropped first; -1 for no limit. */
  maxBytes: number;
}

/**
 * Retention unless set: docs/scaling.md's rule (the backup interval plus a restore) for a daily
 * backup and a day to restore. Every copy of an event, its identifiers boxed, leaves the stream
 * after it, so it is also how long an erasure takes to finish there.
 */
export const DEFAULT_MAX_AGE_HOURS = 48;

export const DEFAULT_SIZING: StreamSizing = {
  replicas: 3,
  maxAgeMs: DEFAULT_MAX_AGE_HOURS * 3600 * 1000,
  maxBytes: -1,
};

/**
 * A published copy of an event is dropped if it arrives within this window of the first, which
 * covers a collector's 20 s of retries and a client SDK's own; beyond it, ingest's dedup holds.
 */
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;
/**
 * A message is one request chunk, cut at 256 KiB by the collector (collector/bus-sink.ts); the
 * limit leaves room above that, under the servers' 1 MB `max_payload`.
 */
const MAX_MESSAGE_BYTES = 512 * 1024;

const NANOS_PER_MS = 1_000_000;

export function eventsStreamConfig(sizing: StreamSizing): Partial<StreamConfig> & { name: string } {
  const { jetstream } = natsPackages();
  return {
    name: EVENTS_STREAM,
    subjects: [ALL_EVENTS],
    storage: jetstream.StorageType.File,
    num_replicas: sizing.replicas,
    retention: jetstream.RetentionPolicy.Limits,
    discard: jetstream.DiscardPolicy.Old,
    duplicate_window: DUPLICATE_WINDOW_MS * NANOS_PER_MS,
    max_age: sizing.maxAgeMs * NANOS_PER_MS,
    max_bytes: sizing.maxBytes,
    max_msg_size: MAX_MESSAGE_BYTES,
    deny_delete: true,
  };
}

/** How long the events stream keeps a message now, in ms (0: for ever). */
export async function streamMaxAgeMs(bus: BusConnection): Promise<number> {
  const info = await (await bus.manager()).streams.info(EVENTS_STREAM);
  return Math.round(info.config.max_age / NANOS_PER_MS);
}

async function streamExists(jsm: JetStreamManager, name: string): Promise<boolean> {
  try {
    await jsm.streams.info(name);
    return true;
  } catch (error) {
    if (/stream not found/i.test((error as Error).message)) return false;
    throw error;
  }
}

export interface InitResult {
  stream: 'created' | 'updated';
  buckets: string[];
}

/**
 * `cds bus init`, as the admin: creates the events stream and the buckets, or brings the
 * stream's sizing to what is given. Running it again changes nothing else.
 */
export async function initBus(bus: BusConnection, sizing: StreamSizing): Promise<InitResult> {
  const jsm = await bus.manager();
  const config = eventsStreamConfig(sizing);
  let stream: InitResult['stream'];
  if (await streamExists(jsm, EVENTS_STREAM)) {
    await jsm.streams.update(EVENTS_STREAM, {
      max_age: config.max_age,
      max_bytes: config.max_bytes,
      max_msg_size: config.max_msg_size,
      num_replicas: config.num_replicas,
    });
    stream = 'updated';
  } else {
    await jsm.streams.add(config);
    stream = 'created';
  }
  const { jetstream } = natsPackages();
  for (const bucket of Object.values(BUCKETS)) {
    await bus.kvm.create(bucket, {
      replicas: sizing.replicas,
      history: 1,
      storage: jetstream.StorageType.File,
    });
  }
  return { stream, buckets: Object.values(BUCKETS) };
}
