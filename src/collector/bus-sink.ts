import type { BusConnection } from '../bus/connect.js';
import { type BoxingKey, boxingKeyFor, type PublishedBusKey } from '../bus/identifier-box.js';
import { type BusMessage, type PublishPolicy, publishAll } from '../bus/publisher.js';
import { chunkMessageId, eventSubject } from '../bus/subjects.js';
import { BusKeyMissingError, ShuttingDownError } from '../errors.js';
import type { AcceptedLines, EventSink } from './event-sink.js';
import type { LandingLine } from './landing-writer.js';
import { newCollectorId } from './landing-writer.js';

/**
 * The most bytes one message carries: a request's lines for one workspace are cut into messages of
 * at most this (one line always fits: an event is at most 32 KiB), well inside the stream's
 * `max_msg_size` (bus/setup.ts) and the servers' 1 MB `max_payload`.
 */
export const MAX_CHUNK_BYTES = 256 * 1024;

/**
 * A request's accepted lines as messages of the events stream (docs/cluster-design.md §3), one
 * per request chunk: the NDJSON a landing file would get, for one tenant and workspace, in the
 * order the request had them. Its subject carries the tenant and workspace as tokens, and its
 * msgID is named by its events' ids, so a copy published again is dropped by the stream.
 */
export function busMessagesOf(lines: readonly LandingLine[]): BusMessage[] {
  const byWorkspace = new Map<string, LandingLine[]>();
  for (const line of lines) {
    const key = JSON.stringify([line.tenantId, line.workspaceId]);
    const group = byWorkspace.get(key);
    if (group) group.push(line);
    else byWorkspace.set(key, [line]);
  }
  const messages: BusMessage[] = [];
  for (const group of byWorkspace.values()) {
    let chunk: LandingLine[] = [];
    let bytes = 0;
    for (const line of group) {
      const size = Buffer.byteLength(line.text);
      if (chunk.length > 0 && bytes + size > MAX_CHUNK_BYTES) {
        messages.push(chunkMessage(chunk));
        chunk = [];
        bytes = 0;
      }
      chunk.push(line);
      bytes += size;
    }
    if (chunk.length > 0) messages.push(chunkMessage(chunk));
  }
  return messages;
}

function chunkMessage(lines: LandingLine[]): BusMessage {
  const { tenantId, workspaceId } = lines[0] as LandingLine;
  return {
    subject: eventSubject(tenantId, workspaceId),
    msgID: chunkMessageId(
      tenantId,
      workspaceId,
      lines.map((line) => line.eventId),
    ),
    data:
      lines.length === 1 ? (lines[0] as LandingLine).text : lines.map((line) => line.text).join(''),
  };
}

/**
 * How long one ephemeral key boxes identifiers: a new one an hour bounds what one leaked
 * collector key opens, at one X25519 an hour.
 */
const EPOCH_MS = 3600 * 1000;

/** The events stream, in cluster mode: a request is answered once the stream holds its events. */
export class BusSink implements EventSink {
  readonly collectorId = newCollectorId();
  readonly form = 'lines';
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
    if (accepted.form !== 'lines')
      return Promise.reject(new Error('the bus sink takes lines, not landing chunks'));
    if (accepted.lines.length === 0) return Promise.resolve();
    const published = publishAll(this.bus.js, busMessagesOf(accepted.lines), this.policy);
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
