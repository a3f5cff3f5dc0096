import type { BusConnection } from '../bus/connect.js';
import { durableName, fromSubjectToken, tenantOfSubject } from '../bus/subjects.js';
import type { Context } from '../context.js';
import { ingestIsolating } from '../ingest/isolate.js';
import { type IngestFailure, LoopHealth } from '../ingest/loop-health.js';
import type { IngestSource } from '../ingest/source.js';
import { componentLog } from '../telemetry/log.js';
import { traced } from '../trace.js';
import type { BusEvent } from './bus-event.js';
import { ensureConsumers } from './consumers.js';
import { type PulledMessage, pull } from './pull.js';
import { readOffsets, streamSource } from './stream-source.js';

/**
 * The most bytes one round takes from one tenant's consumer. Rounds are sized by bytes, as a
 * message is a request chunk of 1 to 1,000 events (docs/cluster-design.md §3): 16 MiB is about
 * 30,000 events of 500 bytes, so a tenant with a backlog pays a batch's fixed cost (about forty
 * statements) that seldom.
 */
export const ROUND_BYTES = 16 * 1024 * 1024;
/** The most bytes one round takes from all its tenants: as many tenants as fit take turns. */
const ROUND_TOTAL_BYTES = 64 * 1024 * 1024;
/**
 * The most messages one round takes from one tenant: single-event requests (a browser's) make
 * small messages, and a round stops at this many however few bytes they hold.
 */
export const ROUND_MESSAGES = 5000;
/**
 * Each consumer's `max_ack_pending`: two rounds, the one ingesting and the next one pulled
 * meanwhile. A consumer found with another is re-created (consumers.ts).
 */
export const MAX_ACK_PENDING = 2 * ROUND_MESSAGES;

/** The shortest pull: the server's heartbeat is at most half of it. */
const MIN_EXPIRES_MS = 1000;
/** The longest a pull of a tenant whose pulls keep failing waits. */
const MAX_EXPIRES_MS = 30_000;

export interface StreamLoopConfig {
  /** The pull's `expires`: how long a round waits for a tenant with less than a round's worth. */
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

/** What an owner reads of a pulled message (a JsMsg has it too). */
export interface FetchedMessage {
  subject: string;
  seq: number;
  data: Uint8Array;
}

const NEWLINE = 0x0a;

/**
 * A pulled message as the batch takes it: its request chunk cut into its lines, in order, each
 * an event of the message's tenant and workspace (from its subject) with the message's sequence
 * and its place in it. A message of one line (as collectors published before chunks, and as a
 * single-event request is) is a chunk of one.
 */
export function busEventsOf(message: FetchedMessage): BusEvent[] {
  const tenantId = tenantOfSubject(message.subject);
  const workspaceId = workspaceOfSubject(message.subject);
  const { data } = message;
  const lines: Uint8Array[] = [];
  for (let start = 0; start < data.length; ) {
    const newline = data.indexOf(NEWLINE, start);
    const end = newline === -1 ? data.length : newline + 1;
    if (end - start > 1 || (newline === -1 && end > start)) lines.push(data.subarray(start, end));
    start = end;
  }
  return lines.map((line, index) => ({
    tenantId,
    workspaceId,
    seq: message.seq,
    index,
    endsMessage: index === lines.length - 1,
    data: line,
  }));
}

/** What one round pulled from one tenant, and why it ended early if it failed. */
interface Fetched {
  tenantId: string;
  messages: PulledMessage[];
  failure: Error | null;
}

/**
 * Up to `ROUND_BYTES` and `ROUND_MESSAGES` of one tenant, or what came before `expiresMs`, in
 * one pull. A pull that fails part way keeps what it returned: the first messages it was given.
 */
async function fetchRound(
  bus: BusConnection,
  tenantId: string,
  expiresMs: number,
): Promise<Fetched> {
  const { messages, failure } = await pull(bus, durableName(tenantId), {
    batch: ROUND_MESSAGES,
    maxBytes: ROUND_BYTES,
    expiresMs,
  });
  return { tenantId, messages, failure };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The stream loop: a shard owner's loop over the tenants it has taken (docs/cluster-design.md
 * §4), its batches through the ingest engine (stream-source.ts). Pull a round from
 * every tenant's consumer at once (sized by bytes); skip what the database already holds
 * (`seq <= S`); ingest the rest as micro-batches, each tenant's last complete message committed
 * with its events; then acknowledge each tenant's last message (its consumer acks all before it)
 * and flush. The next round is pulled while one ingests, and acknowledged only after its own
 * commit. A round that fails on the store leaves its messages, and the next round's,
 * unacknowledged: their tenants are taken again (the restart rule re-creates each consumer right
 * after the database), and the loop retries after growing pauses as the landing loop does.
 * Taking and releasing tenants happens between ingests.
 */
export class StreamLoop {
  /** The tenants taken and not released: what `tenants()` answers. */
  private readonly wanted = new Set<string>();
  /** The tenants in good standing, whose consumers a round pulls from. */
  private readonly consumers = new Set<string>();
  /** S per tenant: the last sequence the database holds. */
  private readonly offsets = new Map<string, number>();
  /** Tenants whose consumer failed a pull or a batch: taken again (restart rule) before they are pulled again. */
  private readonly broken = new Set<string>();
  /** Failed pulls in a row per tenant, which lengthen its next pull (`expiresOf`). */
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
        'owner ingest failed; the messages were left to the stream and are tried again after growing pauses',
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
      this.consumers.delete(tenantId);
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
    await ensureConsumers(this.bus, starts, MAX_ACK_PENDING);
    for (const tenantId of tenantIds) {
      // Released while its consumer was being set right: it stays released.
      if (!this.wanted.has(tenantId)) continue;
      const lastSeq = stored.get(tenantId);
      if (lastSeq === undefined) this.offsets.delete(tenantId);
      else this.offsets.set(tenantId, lastSeq);
      this.broken.delete(tenantId);
      this.consumers.add(tenantId);
    }
  }

  /**
   * Stops consuming a tenant: no round ingests it after this, and the ingest under way has
   * committed (or given back) its messages when this resolves. Returns its S. Messages of it
   * pulled meanwhile stay unacknowledged, and its next owner's restart rule starts after S.
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

  /**
   * Waits for the ingest under way, then for two more: the round pulled while one ingests may
   * have been asked for before the call, so the second is the first wholly after it.
   */
  async ingestNow(): Promise<void> {
    await this.round;
    await this.nextRound();
    await this.nextRound();
    if (this.failure) throw this.failure.error;
  }

  private nextRound(): Promise<void> {
    return new Promise((resolve) => this.nextRoundWaiters.push(resolve));
  }

  /** Stops pulling and lets the rounds under way commit and ack. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    for (const wake of this.nextRoundWaiters.splice(0)) wake();
  }

  private async run(): Promise<void> {
    let pulling: Promise<Fetched[]> | null = null;
    while (!this.stopped || pulling !== null) {
      const waitMs = this.health.pauseLeftMs();
      if (pulling === null && (waitMs > 0 || this.consumers.size + this.broken.size === 0)) {
        await sleep(Math.max(Math.min(waitMs, this.config.intervalMs), 50));
        if (this.consumers.size + this.broken.size === 0) this.roundDone();
        continue;
      }
      const fetched = pulling ? await pulling : await this.pullRound();
      // The next round is pulled while this one ingests.
      pulling = this.stopped ? null : this.pullRound();
      this.round = this.health.attempt(async () => {
        try {
          await this.ingestRound(fetched);
        } catch (error) {
          // Nothing after an uncommitted message may commit before it: the round pulled
          // meanwhile is left unacknowledged too, and every tenant of either is taken again.
          const later = pulling ? await pulling : [];
          pulling = null;
          for (const { tenantId } of [...fetched, ...later]) this.setAside(tenantId);
          throw error;
        }
      });
      await this.round;
      this.roundDone();
    }
  }

  private roundDone(): void {
    for (const wake of this.nextRoundWaiters.splice(0)) wake();
  }

  /** A tenant no round pulls until the restart rule has set its consumer right after S. */
  private setAside(tenantId: string): void {
    this.consumers.delete(tenantId);
    if (this.wanted.has(tenantId)) this.broken.add(tenantId);
  }

  /** One pull of every consumer in good standing (or of those whose turn it is). */
  private async pullRound(): Promise<Fetched[]> {
    if (this.broken.size > 0) await this.take([...this.broken]).catch(() => undefined);
    const fetched = await Promise.all(
      this.consumersThisRound().map((tenantId) =>
        fetchRound(this.bus, tenantId, this.expiresOf(tenantId)),
      ),
    );
    // Not pulled again until taken again, once what it returned is in: a later pull would get
    // messages after those it was given and did not return, and commit past them.
    for (const { tenantId, failure } of fetched)
      if (failure !== null) this.consumers.delete(tenantId);
    // A consumer that fails at once must not make the rounds spin; one that returned messages
    // before it failed moved on, and goes on at once.
    if (fetched.some(({ messages, failure }) => failure !== null && messages.length === 0))
      await sleep(this.config.intervalMs);
    return fetched;
  }

  private async ingestRound(fetched: Fetched[]): Promise<void> {
    await this.health.upkeep({
      beforeBatch: fetched.some(({ messages }) => messages.length > 0),
    });
    const fresh: PulledMessage[] = [];
    const lastOf = new Map<string, PulledMessage>();
    for (const { tenantId, messages, failure } of fetched) {
      // Released while it was pulled: left unacknowledged for its next owner's restart rule.
      if (!this.wanted.has(tenantId)) continue;
      if (failure !== null) this.pullFailed(tenantId, failure, messages.length);
      else this.failedFetches.delete(tenantId);
      const lastSeq = this.offsets.get(tenantId);
      // Already in the database: a redelivery after a crash between commit and ack, or the
      // round pulled while the batch that held it committed.
      for (const message of messages)
        if (lastSeq === undefined || message.seq > lastSeq) fresh.push(message);
      const last = messages.at(-1);
      if (last) lastOf.set(tenantId, last);
    }
    const events = fresh.flatMap(busEventsOf);
    for (let start = 0; start < events.length; start += this.config.maxBatchEvents)
      await this.ingest(events.slice(start, start + this.config.maxBatchEvents), fresh);
    for (const message of lastOf.values()) message.ack();
    if (lastOf.size > 0) await this.bus.nc.flush();
  }

  /**
   * The messages a pull was given after those it returned stay pending; left so, they would
   * come back after newer ones and be skipped as already in. The ones it returned are ingested
   * now, and the restart rule then re-creates the consumer right after them, so each failed pull
   * still moves the tenant on. Its next pull waits longer: a pull right after a re-creation waits
   * for the new consumer's leader, which on a loaded machine can outlast a short pull.
   */
  private pullFailed(tenantId: string, failure: Error, returned: number): void {
    const failures = (this.failedFetches.get(tenantId) ?? 0) + 1;
    this.failedFetches.set(tenantId, failures);
    log().warn(
      { tenant_id: tenantId, err: failure, returned, failures },
      'pull failed; the consumer is checked again',
    );
    this.setAside(tenantId);
  }

  /** The pull's `expires`: the loop's interval, doubled per failed pull in a row, to 30 s. */
  private expiresOf(tenantId: string): number {
    const failures = Math.min(this.failedFetches.get(tenantId) ?? 0, 5);
    return Math.min(
      MAX_EXPIRES_MS,
      Math.max(MIN_EXPIRES_MS, this.config.intervalMs) * 2 ** failures,
    );
  }

  /**
   * The consumers one round pulls from: all of them, unless their rounds together could hold
   * more than `ROUND_TOTAL_BYTES` in memory; then as many as fit, taking turns.
   */
  private consumersThisRound(): string[] {
    const all = [...this.consumers];
    const fit = Math.max(1, Math.floor(ROUND_TOTAL_BYTES / ROUND_BYTES));
    if (all.length <= fit) return all;
    const start = this.turn % all.length;
    this.turn = start + fit;
    return [...all, ...all].slice(start, start + fit);
  }

  private async ingest(events: BusEvent[], messages: readonly PulledMessage[]): Promise<void> {
    const startedAt = performance.now();
    const outcome = await traced('owner batch', () =>
      ingestIsolating(this.context, this.source, events),
    );
    for (const event of events) {
      if (!event.endsMessage) continue;
      this.offsets.set(event.tenantId, Math.max(this.offsets.get(event.tenantId) ?? 0, event.seq));
    }
    let oldest = Number.POSITIVE_INFINITY;
    for (const message of messages) oldest = Math.min(oldest, message.time.getTime());
    this.health.committed(outcome, (performance.now() - startedAt) / 1000, oldest);
    this.config.onBatch?.();
  }
}
