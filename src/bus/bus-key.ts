import type { KV } from '@nats-io/kv';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { type BucketWatch, watchBucket } from './bucket-watch.js';
import type { BusConnection } from './connect.js';
import { busPublicKey, isBusKeyId, newBusKeyId, type PublishedBusKey } from './identifier-box.js';
import { BUCKETS } from './setup.js';

/**
 * The bus key collectors box identifiers to (docs/scaling.md "The bus key"): one entry of the
 * registry bucket, which every collector already reads and only owners and the admin write. It
 * holds the public half only; owners derive the private half of any key id from the master key.
 */
export const BUS_KEY_ENTRY = 'bus-key';

const publishedBusKeySchema = z.object({
  key_id: z.string().refine(isBusKeyId, 'is not a bus key id'),
  public_key: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'is not an X25519 public key'),
  created_at: z.string(),
});

export function parseBusKey(text: string): PublishedBusKey {
  return publishedBusKeySchema.parse(JSON.parse(text));
}

async function registryBucket(bus: BusConnection): Promise<KV> {
  return bus.kvm.open(BUCKETS.registry);
}

/** The bus key collectors box to now, or null before any owner published one. */
export async function readBusKey(bus: BusConnection): Promise<PublishedBusKey | null> {
  const entry = await (await registryBucket(bus)).get(BUS_KEY_ENTRY);
  if (entry?.operation !== 'PUT') return null;
  return parseBusKey(entry.string());
}

function newBusKey(masterKey: Buffer, now: string): PublishedBusKey {
  const keyId = newBusKeyId();
  return { key_id: keyId, public_key: busPublicKey(masterKey, keyId), created_at: now };
}

/**
 * An owner's start: publishes a first bus key if the bucket has none (two owners starting at once
 * make one: the create of the second fails and it reads the first's), and refuses to run when the
 * published key is not one this master key derives, since this owner could open no box.
 */
export async function ensureBusKey(
  bus: BusConnection,
  masterKey: Buffer,
  now: string,
): Promise<PublishedBusKey> {
  const kv = await registryBucket(bus);
  let current = await readBusKey(bus);
  if (current === null) {
    const made = newBusKey(masterKey, now);
    try {
      await kv.create(BUS_KEY_ENTRY, JSON.stringify(made));
      current = made;
    } catch (error) {
      current = await readBusKey(bus);
      if (current === null) throw error;
    }
  }
  if (busPublicKey(masterKey, current.key_id) !== current.public_key)
    throw new ConfigError(
      'CDS_MASTER_KEY',
      `is not the master key of this cluster: bus key ${current.key_id} was not made with it, so this owner could open no identifier box (every owner and \`cds bus rotate-key\` use the cluster's one master key)`,
    );
  return current;
}

/** `cds bus rotate-key`: a new bus key becomes the one collectors box to; the old one still opens. */
export async function rotateBusKey(
  bus: BusConnection,
  masterKey: Buffer,
  now: string,
): Promise<{ current: PublishedBusKey; previous: PublishedBusKey | null }> {
  const previous = await readBusKey(bus);
  const current = newBusKey(masterKey, now);
  await (await registryBucket(bus)).put(BUS_KEY_ENTRY, JSON.stringify(current));
  return { current, previous };
}

/** A collector's side: `onKey` gets the published key at once (if any) and each new one. */
export async function watchBusKey(
  bus: BusConnection,
  onKey: (key: PublishedBusKey | null) => void,
): Promise<BucketWatch> {
  return watchBucket(await registryBucket(bus), BUS_KEY_ENTRY, (change) => {
    onKey(change.deleted ? null : parseBusKey(change.entry.string()));
  });
}
