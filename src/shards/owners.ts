import type { KV } from '@nats-io/kv';
import { z } from 'zod';
import { type BucketWatch, watchBucket } from '../bus/bucket-watch.js';
import type { BusConnection } from '../bus/connect.js';
import { BUCKETS } from '../bus/setup.js';

/** What an owner announces of itself (bucket `cds_owners`, key `shard.<name>`). */
export const ownerAnnouncementSchema = z.object({
  url: z.url(),
  pid: z.number().int(),
  started_at: z.string(),
});
export type OwnerAnnouncement = z.infer<typeof ownerAnnouncementSchema>;

// Shard names are `[a-z0-9][a-z0-9_-]*` (config.ts), so each is its own key token.
const ownerKey = (shard: string) => `shard.${shard}`;

/** The owners of a cluster: each announces the URL it answers on; every owner watches them all. */
export class Owners {
  private readonly urls = new Map<string, OwnerAnnouncement>();
  private watching: BucketWatch | null = null;

  private constructor(private readonly kv: KV) {}

  static async open(bus: BusConnection): Promise<Owners> {
    const owners = new Owners(await bus.kvm.open(BUCKETS.owners));
    owners.watching = await watchBucket(owners.kv, 'shard.>', (change) => {
      const shard = change.key.slice('shard.'.length);
      if (change.deleted) owners.urls.delete(shard);
      else owners.urls.set(shard, ownerAnnouncementSchema.parse(change.entry.json()));
    });
    await owners.watching.loaded;
    return owners;
  }

  announce(shard: string, announcement: OwnerAnnouncement): Promise<number> {
    return this.kv.put(ownerKey(shard), JSON.stringify(announcement));
  }

  /** The owner of `shard` as last announced, or null if none ever was. */
  of(shard: string): OwnerAnnouncement | null {
    return this.urls.get(shard) ?? null;
  }

  /** Every shard with an announced owner. */
  all(): ReadonlyMap<string, OwnerAnnouncement> {
    return this.urls;
  }

  stop(): void {
    this.watching?.stop();
  }
}
