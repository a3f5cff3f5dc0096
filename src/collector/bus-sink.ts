import type { BusConnection } from '../bus/connect.js';
import { type BoxingKey, boxingKeyFor, type PublishedBusKey } from '../bus/identifier-box.js';
import { type PublishPolicy, publishAll } from '../bus/publisher.js';
import { BusKeyMissingError, ShuttingDownError } from '../errors.js';
import type { AcceptedLines, EventSink } from './event-sink.js';
import { newCollectorId } from './landing-writer.js';

/**
 * How long one ephemeral key boxes identifiers: a new one an hour bounds what one leaked
 * collector key opens, at one X25519 an hour.
 */
const EPOCH_MS = 3600 * 1000;

/** The events stream, in cluster mode: a request is answered once the stream holds its events. */
export class BusSink implements EventSink {
  readonly collectorId = newCollectorId();
  readonly form = 'messages';
  private closed = false;
  private readonly underWay = new Set<Promise<void>>();
  private busKey: PublishedBusKey | null = null;
  private epoch: { boxing: BoxingKey; keyId: string; endsAt: number } | null = null;

  constructor(
    private readonly bus: BusConnection,
    private readonly policy: PublishPolicy,
  ) {}

  /** The bus key the registry bucket publishes now (bus/bus-key.ts); a new one starts an epoch. */
  useBusKey(busKey: PublishedBusKey | null): void {
    this.busKey = busKey;
  }

  hasBusKey(): boolean {
    return this.busKey !== null;
  }

  /**
   * This epoch's key to box identifiers to: refused (503, retried by clients) until an owner
   * has published the bus key, as no event may reach the stream with plain identifiers.
   */
  boxingKey(): BoxingKey {
    const busKey = this.busKey;
    if (busKey === null) throw new BusKeyMissingError();
    const now = performance.now();
    if (this.epoch === null || this.epoch.keyId !== busKey.key_id || now >= this.epoch.endsAt)
      this.epoch = { boxing: boxingKeyFor(busKey), keyId: busKey.key_id, endsAt: now + EPOCH_MS };
    return this.epoch.boxing;
  }

  append(accepted: AcceptedLines): Promise<void> {
    if (this.closed) return Promise.reject(new ShuttingDownError());
    if (accepted.form !== 'messages')
      return Promise.reject(new Error('the bus sink takes messages, not landing chunks'));
    if (accepted.messages.length === 0) return Promise.resolve();
    const published = publishAll(this.bus.js, accepted.messages, this.policy);
    const settled: Promise<void> = published.then(
      () => {
        this.underWay.delete(settled);
      },
      () => {
        this.underWay.delete(settled);
      },
    );
    this.underWay.add(settled);
    return published;
  }

  /** Takes no more events and waits for the publishes under way; the connection is the caller's. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.underWay);
  }
}
