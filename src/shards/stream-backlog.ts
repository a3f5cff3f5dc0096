import type { ConsumerInfo, JetStreamManager, MsgRequest } from '@nats-io/jetstream';
import type { BusConnection } from '../bus/connect.js';
import { durableName, EVENTS_STREAM, tenantFilter } from '../bus/subjects.js';
import { systemClock } from '../clock.js';
import { withoutQuotedValues } from '../redact.js';
import { componentLog } from '../telemetry/log.js';

/** Consumers read at once, as the restart rule sets them up. */
const IN_PARALLEL = 20;

/** One tenant's part of an owner's stream backlog. */
export interface TenantStreamBacklog {
  tenantId: string;
  /** Its messages the owner has not acknowledged: `num_pending + num_ack_pending`. */
  pending: number;
  /** When the stream stored the oldest of them; null with none (or none found any more). */
  oldestAt: Date | null;
}

/** What an owner last read of its consumers, for `/readyz` and `/metrics`. */
export interface StreamBacklogReading {
  /** When the figures were read; null until the first reading. */
  readAt: Date | null;
  /** Every tenant the owner consumed then, with or without a backlog. */
  tenants: readonly TenantStreamBacklog[];
  /** Since when reading fails (the figures are the last good ones); null while it works. */
  failingSince: Date | null;
}

const log = () => componentLog('owner');

async function infoOrNull(jsm: JetStreamManager, tenantId: string): Promise<ConsumerInfo | null> {
  try {
    return await jsm.consumers.info(EVENTS_STREAM, durableName(tenantId));
  } catch (error) {
    // Being re-created by the restart rule: its next reading counts it.
    if (/consumer not found/i.test((error as Error).message)) return null;
    throw error;
  }
}

/**
 * The first sequence that may hold an unacknowledged message of the consumer. With messages in
 * flight, it is after the ack floor; but a consumer created at a start sequence reports an ack
 * floor of 0 until its first ack (nats-server 2.9.10), so never before that start. With none in
 * flight, it is the first not delivered.
 */
function firstUnacked(info: ConsumerInfo): number {
  if (info.num_ack_pending === 0) return info.delivered.stream_seq + 1;
  return Math.max(info.ack_floor.stream_seq + 1, info.config.opt_start_seq ?? 1);
}

async function readTenant(
  jsm: JetStreamManager,
  tenantId: string,
): Promise<TenantStreamBacklog | null> {
  const info = await infoOrNull(jsm, tenantId);
  if (info === null) return null;
  const pending = info.num_pending + info.num_ack_pending;
  if (pending === 0) return { tenantId, pending, oldestAt: null };
  // The server (2.9 too) takes `next_by_subj` on MSG.GET; the client types it for direct gets only.
  const query = { next_by_subj: tenantFilter(tenantId), seq: firstUnacked(info) };
  const oldest = await jsm.streams.getMessage(EVENTS_STREAM, query as unknown as MsgRequest);
  return { tenantId, pending, oldestAt: oldest?.time ?? null };
}

/**
 * An owner's stream backlog, read from its tenants' consumers every `everyMs`
 * (`bus_backlog_interval_ms`) on a timer of its own, so the figures stay true when the owner loop
 * is stuck or failing: the loop is what they watch. `/readyz` and `/metrics` answer from the last
 * reading, so a probe costs no request to the bus, and the bus sees one consumer info per tenant
 * (and one message read per tenant with a backlog) every `everyMs`, whatever the probe rate. A
 * reading that fails keeps the last figures and says since when it fails.
 */
export class StreamBacklog {
  private current: StreamBacklogReading = { readAt: null, tenants: [], failingSince: null };
  private timer: NodeJS.Timeout | undefined;
  private reading: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly bus: BusConnection,
    /** The tenants the owner consumes now. */
    private readonly tenants: () => readonly string[],
    private readonly everyMs: number,
  ) {}

  /** The last reading. */
  latest(): StreamBacklogReading {
    return this.current;
  }

  /** Reads the backlog now (a failure is kept in the reading, not thrown). */
  async read(): Promise<void> {
    try {
      const jsm = await this.bus.manager();
      const queue = [...this.tenants()];
      const read: TenantStreamBacklog[] = [];
      const worker = async () => {
        for (let tenantId = queue.shift(); tenantId !== undefined; tenantId = queue.shift()) {
          const backlog = await readTenant(jsm, tenantId);
          if (backlog !== null) read.push(backlog);
        }
      };
      await Promise.all(Array.from({ length: Math.min(IN_PARALLEL, queue.length) }, worker));
      this.current = { readAt: systemClock.now(), tenants: read, failingSince: null };
    } catch (error) {
      if (this.current.failingSince === null)
        log().warn(
          { cause: withoutQuotedValues((error as Error).message) },
          'the stream backlog could not be read; /readyz shows the last figures until it can',
        );
      this.current = {
        ...this.current,
        failingSince: this.current.failingSince ?? systemClock.now(),
      };
    }
  }

  /** Reads now, then `everyMs` after each reading ends, until `stop()`. */
  async start(): Promise<void> {
    await this.read();
    const next = () => {
      if (this.stopped) return;
      this.timer = setTimeout(() => {
        this.reading = this.read().then(next);
      }, this.everyMs);
      this.timer.unref();
    };
    next();
  }

  /** Stops the timer and waits for a reading under way. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.reading;
  }
}
