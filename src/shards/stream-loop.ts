import type { Consumer, JsMsg } from '@nats-io/jetstream';
import type { BusConnection } from '../bus/connect.js';
import { durableName, EVENTS_STREAM, fromSubjectToken, tenantOfSubject } from '../bus/subjects.js';
import type { Context } from '../context.js';
import { ingestIsolating } from '../ingest/isolate.js';
import { type IngestFailure, LoopHealth } from '../ingest/loop-health.js';
import type { IngestSource } from '../ingest/source.js';
import { componentLog } from '../telemetry/log.js';
import { traced } from '../trace.js';
import type { BusEvent } from './bus-event.js';
import { ensureConsumers } from './consumers.js';
import { readOffsets, streamSource } from './stream-source.js';

/**
 * M: the most messages one fetch takes from a tenant's consumer, and the consumer's
 * `max_ack_pending` (docs/cluster-design.md §4). A consumer found with another is re-created.
 * A batch's fixed cost (about forty statements) is paid per round, so a tenant with a backlog
 * is taken 5,000 at a time: 1,000 held one owner to about 11k events/s.
 */
export const FETCH_SIZE = 5000;

/** The client refuses a fetch that expires sooner. */
const MIN_EXPIRES_MS = 1000;
/** The longest a fetch of a tenant whose fetches keep failing waits (heartbeats at half). */
const MAX_EXPIRES_MS = 30_000;

export interface StreamLoopConfig {
  /** The fetch's `expires`: how long a round waits for a tenant with fewer than M events. */
  intervalMs: number;
  /** The most events one transaction takes (design §4 `max_batch_events`). */
  maxBatchEvents: number;
  /** Called after each committed batch (webhook sender's tick). */
  onBatch?: () => void;
}

const log = () => componentLog('owner');

/** The workspace of an event subject `cds.events.<T>.<W>`. */
function workspaceOfSubject(subject: string): string {
  return fromSubjectToken(subject.split('.')[3] ?? '');
}

/** A fetched message as the batch takes it: tenant and workspace from its subject. */
export function busEventOf(message: JsMsg): BusEvent {
  return {
    tenantId: tenantOfSubject(message.subject),
    workspaceId: workspaceOfSubject(message.subject),
    seq: message.seq,
    data: message.data,
  };
}

/** What one fetch returned, and why it ended early if it failed. */
interface Fetched {
  messages: JsMsg[];
  failure: Error | null;
}

/**
 * Up to `max` messages, or what came before `expires`. A fetch that fails part way (most often
 * the client's "heartbeats missed" on a loaded machine) keeps what it returned: those are the
 * first of the messages it was given, in order.
 */
async function fetchAll(consumer: Consumer, max: number, expires: number): Promise<Fetched> {
  const messages: JsMsg[] = [];
  try {
    for await (const message of await consumer.fetch({ max_messages: max, expires }))
      messages.push(message);
    return { messages, failure: null };
  } catch (error) {
    return { messages, failure: error as Error };
  }
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The stream loop: a shard owner's loop over the tenants it has taken (docs/cluster-design.md
 * §4), its batches through the ingest engine (stream-source.ts). Fetch up to M from every
 * tenant's consumer at once; ack at once what the database already holds (`seq <= S`);
 * ingest the rest as micro-batches, each tenant's last sequence committed with its events; then
 * ack and flush. A batch that fails on the store is nak'ed, so its messages come back first (no
 * consumer delivers past M unacknowledged), and the loop retries after growing pauses as the
 * landing loop does. Rounds never overlap; taking and releasing tenants happens between them.
 */
export class StreamLoop {
  /** The tenants taken and not released: what `tenants()` answers. */
  private readonly wanted = new Set<string>();
  private readonly consumers = new Map<string, Consumer>();
  /** S per tenant: the last sequence the database holds. */
  private readonly offsets = new Map<string, number>();
  /** Tenants whose consumer failed a fetch: taken again (restart rule) before the next round. */
  private readonly broken = new Set<string>();
  /** Failed fetches in a row per tenant, which lengthen its next fetch (`expiresOf`). */
  private readonly failedFetches = new Map<string, number>();
  private round: Promise<void> = Promise.resolve();
  private running: Promise<void> | null = null;
  private stopped = false;
  private nextRoundWaiters: (() => void)[] = [];
  /** Where the next round starts among the consumers, when not all fit in one. */
  private turn = 0;
  private taking: Promise<void> = Promise.resolve();
  private readonly health: LoopHealth;
  private readonly source: IngestSource<BusEvent>;

  constructor(
    private readonly context: Context,
    private readonly bus: BusConnection,
    private readonly config: StreamLoopConfig,
  ) {
    this.health = new LoopHealth(context, {
      log,
      firstRetryMs: config.intervalMs,
      failedMessage:
        'owner ingest failed; the messages were given back to the stream and are tried again after growing pauses',
    });
    this.source = streamSource(context);
  }

  /** The failed rounds in a row, until one commits. */
  get failure(): IngestFailure | null {
    return this.health.failure;
  }

  /** The tenants being consumed now (a consumer being set right included). */
  tenants(): string[] {
    return [...this.wanted];
  }

  /**
   * Starts consuming these tenants: reads S from the database and applies the restart rule to
   * each consumer, so each starts exactly after what the database holds. Until its consumer is
   * set right a tenant counts as broken, so a failure here is retried by the next round.
   */
  take(tenantIds: readonly string[]): Promise<void> {
    for (const tenantId of tenantIds) {
      this.wanted.add(tenantId);
      this.broken.add(tenantId);
    }
    // One at a time: two restart rules on one consumer would delete each other's.
    const taking = this.taking.then(() => this.setUp(tenantIds));
    this.taking = taking.catch(() => undefined);
    return taking;
  }

  private async setUp(tenantIds: readonly string[]): Promise<void> {
    tenantIds = tenantIds.filter((tenantId) => this.wanted.has(tenantId));
    if (tenantIds.length === 0) return;
    const stored = await readOffsets(this.context);
    const starts = new Map(tenantIds.map((id) => [id, stored.get(id) ?? null] as const));
    await ensureConsumers(this.bus, starts, FETCH_SIZE);
    for (const tenantId of tenantIds) {
      const consumer = await this.bus.js.consumers.get(EVENTS_STREAM, durableName(tenantId));
      // Released while its consumer was being set right: it stays released.
      if (!this.wanted.has(tenantId)) continue;
      const lastSeq = stored.get(tenantId);
      if (lastSeq === undefined) this.offsets.delete(tenantId);
      else this.offsets.set(tenantId, lastSeq);
      this.broken.delete(tenantId);
      this.consumers.set(tenantId, consumer);
    }
  }

  /**
   * Stops consuming a tenant: no round fetches it after this, and the round under way has
   * committed (or given back) its messages when this resolves. Returns its S.
   */
  async release(tenantId: string): Promise<number | null> {
    this.wanted.delete(tenantId);
    this.consumers.delete(tenantId);
    this.broken.delete(tenantId);
    this.failedFetches.delete(tenantId);
    await this.round;
    const lastSeq = this.offsets.get(tenantId) ?? null;
    this.offsets.delete(tenantId);
    return lastSeq;
  }

  start(): void {
    this.running ??= this.run();
  }

  /** Waits for the round under way, then for one whole round: what was in the stream is in. */
  async ingestNow(): Promise<void> {
    await this.round;
    await this.nextRound();
    if (this.failure) throw this.failure.error;
  }

  private nextRound(): Promise<void> {
    return new Promise((resolve) => this.nextRoundWaiters.push(resolve));
  }

  /** Stops fetching and lets the round under way commit and ack. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    for (const wake of this.nextRoundWaiters.splice(0)) wake();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const waitMs = this.health.pauseLeftMs();
      if (waitMs > 0 || this.consumers.size + this.broken.size === 0) {
        await sleep(Math.max(Math.min(waitMs, this.config.intervalMs), 50));
        if (this.consumers.size + this.broken.size === 0) this.roundDone();
        continue;
      }
      this.round = this.health.attempt(() => this.oneRound());
      await this.round;
      this.roundDone();
    }
  }

  private roundDone(): void {
    for (const wake of this.nextRoundWaiters.splice(0)) wake();
  }

  private async oneRound(): Promise<void> {
    if (this.broken.size > 0) await this.take([...this.broken]);
    await this.health.upkeep();
    let failedAtOnce = false;
    const fetched = await Promise.all(
      this.consumersThisRound().map(async ([tenantId, consumer]) => {
        const { messages, failure } = await fetchAll(
          consumer,
          FETCH_SIZE,
          this.expiresOf(tenantId),
        );
        if (failure === null) {
          this.failedFetches.delete(tenantId);
          return messages;
        }
        // The messages the fetch was given after those it returned stay pending; left so, they
        // would come back after newer ones and be skipped as already in. The ones it returned
        // are ingested now, and the restart rule then re-creates the consumer right after them,
        // so each failed fetch still moves the tenant on. Its next fetch waits longer: a fetch
        // right after a re-creation waits for the new consumer's leader, which on a loaded
        // machine outlasts a one-second fetch's heartbeats, round after round.
        const failures = (this.failedFetches.get(tenantId) ?? 0) + 1;
        this.failedFetches.set(tenantId, failures);
        log().warn(
          { tenant_id: tenantId, err: failure, returned: messages.length, failures },
          'fetch failed; the consumer is checked again',
        );
        if (this.consumers.delete(tenantId)) this.broken.add(tenantId);
        if (messages.length === 0) failedAtOnce = true;
        return messages;
      }),
    );
    const messages = fetched.flat();
    // A consumer that fails at once must not make the rounds spin; one that returned messages
    // before it failed moved on, and goes on at once.
    if (failedAtOnce) await sleep(this.config.intervalMs);
    if (messages.length === 0) return;
    const fresh: JsMsg[] = [];
    for (const message of messages) {
      const tenantId = tenantOfSubject(message.subject);
      const lastSeq = this.offsets.get(tenantId);
      // Already in the database: a redelivery after a crash between commit and ack.
      if (lastSeq !== undefined && message.seq <= lastSeq) message.ack();
      else fresh.push(message);
    }
    let start = 0;
    try {
      for (; start < fresh.length; start += this.config.maxBatchEvents)
        await this.ingest(fresh.slice(start, start + this.config.maxBatchEvents));
    } catch (error) {
      // Rolled back: everything not committed is given back now, so it comes again first and
      // nothing newer passes it (an unacked message left to its ack wait would be passed).
      for (const message of fresh.slice(start)) message.nak();
      throw error;
    } finally {
      await this.bus.nc.flush();
    }
  }

  /** The fetch's `expires`: the loop's interval, doubled per failed fetch in a row, to 30 s. */
  private expiresOf(tenantId: string): number {
    const failures = Math.min(this.failedFetches.get(tenantId) ?? 0, 5);
    return Math.min(
      MAX_EXPIRES_MS,
      Math.max(MIN_EXPIRES_MS, this.config.intervalMs) * 2 ** failures,
    );
  }

  /**
   * The consumers one round fetches from: all of them, unless their fetches together could hold
   * more than `max_batch_events` messages in memory; then as many as fit, taking turns.
   */
  private consumersThisRound(): [string, Consumer][] {
    const all = [...this.consumers];
    const fit = Math.max(1, Math.floor(this.config.maxBatchEvents / FETCH_SIZE));
    if (all.length <= fit) return all;
    const start = this.turn % all.length;
    this.turn = start + fit;
    return [...all, ...all].slice(start, start + fit);
  }

  private async ingest(messages: JsMsg[]): Promise<void> {
    const startedAt = performance.now();
    const outcome = await traced('owner batch', () =>
      ingestIsolating(this.context, this.source, messages.map(busEventOf)),
    );
    for (const message of messages) {
      const tenantId = tenantOfSubject(message.subject);
      this.offsets.set(tenantId, Math.max(this.offsets.get(tenantId) ?? 0, message.seq));
      message.ack();
    }
    const oldest = Math.min(...messages.map((message) => message.time.getTime()));
    this.health.committed(outcome, (performance.now() - startedAt) / 1000, oldest);
    this.config.onBatch?.();
  }
}
