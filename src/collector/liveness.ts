import type { KV } from '@nats-io/kv';
import { type BucketWatch, watchBucket } from '../bus/bucket-watch.js';
import type { BusConnection } from '../bus/connect.js';
import { BUCKETS } from '../bus/setup.js';
import { subjectToken } from '../bus/subjects.js';
import { componentLog } from '../telemetry/log.js';

export interface LivenessTiming {
  /** How often a collector says it is alive. */
  heartbeatMs: number;
  /** A collector not heard of for this long is taken as gone (2.9 has no per-key TTL). */
  liveMs: number;
}

export const DEFAULT_LIVENESS: LivenessTiming = { heartbeatMs: 2_000, liveMs: 6_000 };

const keyOf = (collectorId: string) => `collector.${subjectToken(collectorId)}`;

/**
 * The collectors alive on the bus, for the share of the rate limits (docs/cluster-design.md §6:
 * the limit divided among live collectors). Each collector puts `collector.<id>` in
 * `cds_collectors` every `heartbeatMs` and watches the others'; one is live while its last put is
 * under `liveMs` old, measured on this process's clock from when the put was seen, so clocks of
 * other machines do not count.
 */
export class CollectorLiveness {
  /** `performance.now()` when each collector's key was last seen put. */
  private readonly seen = new Map<string, number>();
  private timer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly kv: KV,
    private readonly key: string,
    private readonly timing: LivenessTiming,
    private watch: BucketWatch | null = null,
  ) {}

  static async start(
    bus: BusConnection,
    collectorId: string,
    timing: LivenessTiming = DEFAULT_LIVENESS,
  ): Promise<CollectorLiveness> {
    const kv = await bus.kvm.open(BUCKETS.collectors);
    const liveness = new CollectorLiveness(kv, keyOf(collectorId), timing);
    liveness.watch = await watchBucket(kv, 'collector.>', (change) => {
      if (change.deleted) {
        liveness.seen.delete(change.key);
        return;
      }
      // A value delivered at the start was put before the watch: its age is the bucket's.
      const age = change.entry.isUpdate
        ? 0
        : Math.max(0, Date.now() - change.entry.created.getTime());
      liveness.seen.set(change.key, performance.now() - age);
    });
    await liveness.beat();
    liveness.timer = setInterval(() => liveness.beat(), timing.heartbeatMs);
    liveness.timer.unref();
    return liveness;
  }

  /** The collectors live now, this one always among them. */
  liveCount(): number {
    const now = performance.now();
    let live = 0;
    for (const [key, at] of this.seen) {
      if (key !== this.key && now - at < this.timing.liveMs) live += 1;
    }
    return live + 1;
  }

  /** `limit` shared among the live collectors: this one's part, rounded up. */
  shareOf(limit: number): number {
    return Math.ceil(limit / this.liveCount());
  }

  private async beat(): Promise<void> {
    await this.kv
      .put(this.key, JSON.stringify({ at: new Date().toISOString() }))
      .catch((error: unknown) =>
        componentLog('bus').debug({ err: error }, 'a collector heartbeat was not put'),
      );
  }

  /** Stops the heartbeat and deletes this collector's key: the others take its share at once. */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.watch?.stop();
    await this.kv.delete(this.key).catch(() => undefined);
  }
}
