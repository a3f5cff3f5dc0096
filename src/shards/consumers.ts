import { setTimeout as sleep } from 'node:timers/promises';
import type {
  ConsumerConfig,
  ConsumerInfo,
  JetStreamManager,
  MsgRequest,
} from '@nats-io/jetstream';
import { type BusConnection, natsPackages } from '../bus/connect.js';
import { durableName, EVENTS_STREAM, tenantFilter } from '../bus/subjects.js';
import { componentLog } from '../telemetry/log.js';

/** A redelivery waits this long after a crash only if the restart rule did not re-create it. */
const ACK_WAIT_MS = 30_000;
const NANOS_PER_MS = 1_000_000;
/** Creating an R3 consumer alone takes about 0.5 s; 20 at a time take about 40 ms each. */
const IN_PARALLEL = 20;

/**
 * An add refused because a consumer of that name is there again: one whose delete the cluster has
 * not applied everywhere yet (seen just after a node rejoined), or one another process added
 * meanwhile with a start the add cannot change.
 */
const NAME_IN_USE = /consumer name already in use|can not be updated/i;
const NAME_IN_USE_ATTEMPTS = 8;
/** Grows per attempt: the seven pauses of eight attempts come to 5.6 s. */
const NAME_IN_USE_PAUSE_MS = 200;

/** Why a tenant's consumer was re-created at its database's sequence + 1, for the log and tests. */
export type ConsumerVerdict = 'kept' | 'missing' | 'pending' | 'config' | 'ahead_of_database';

function consumerConfig(tenantId: string, maxAckPending: number, lastSeq: number | null) {
  const { jetstream } = natsPackages();
  const start =
    lastSeq === null
      ? { deliver_policy: jetstream.DeliverPolicy.All }
      : { deliver_policy: jetstream.DeliverPolicy.StartSequence, opt_start_seq: lastSeq + 1 };
  return {
    durable_name: durableName(tenantId),
    filter_subject: tenantFilter(tenantId),
    // One acknowledgement per tenant per round: the last message's acknowledges every one
    // delivered before it (2.9 has it; docs/cluster-design.md §4).
    ack_policy: jetstream.AckPolicy.All,
    ack_wait: ACK_WAIT_MS * NANOS_PER_MS,
    max_deliver: -1,
    // Two rounds: the one ingesting and the one pulled meanwhile. A message a pull was given and
    // did not return is never left behind newer ones: a failed pull or batch has the restart
    // rule re-create the consumer (docs/cluster-design.md §4, pitfall 4).
    max_ack_pending: maxAckPending,
    ...start,
  } satisfies Partial<ConsumerConfig>;
}

async function infoOrNull(jsm: JetStreamManager, name: string): Promise<ConsumerInfo | null> {
  try {
    return await jsm.consumers.info(EVENTS_STREAM, name);
  } catch (error) {
    if (/consumer not found/i.test((error as Error).message)) return null;
    throw error;
  }
}

/**
 * Whether the consumer acknowledged events the database does not hold (a restored backup, a
 * copy in a move): the tenant's first message after S is at or below its ack floor. The ack floor
 * is never compared with S itself, since it also moves over other tenants' sequences.
 */
async function ackedPastDatabase(
  jsm: JetStreamManager,
  tenantId: string,
  lastSeq: number | null,
  info: ConsumerInfo,
): Promise<boolean> {
  // The server (2.9 too) takes `next_by_subj` on MSG.GET; the client types it for direct gets only.
  const query = { next_by_subj: tenantFilter(tenantId), seq: (lastSeq ?? 0) + 1 };
  const next = await jsm.streams.getMessage(EVENTS_STREAM, query as unknown as MsgRequest);
  return next !== null && next.seq <= info.ack_floor.stream_seq;
}

async function verdictOf(
  jsm: JetStreamManager,
  tenantId: string,
  lastSeq: number | null,
  maxAckPending: number,
): Promise<ConsumerVerdict> {
  const info = await infoOrNull(jsm, durableName(tenantId));
  if (info === null) return 'missing';
  if (info.num_ack_pending > 0) return 'pending';
  if (
    info.config.max_ack_pending !== maxAckPending ||
    info.config.filter_subject !== tenantFilter(tenantId) ||
    info.config.ack_policy !== natsPackages().jetstream.AckPolicy.All
  )
    return 'config';
  if (await ackedPastDatabase(jsm, tenantId, lastSeq, info)) return 'ahead_of_database';
  return 'kept';
}

/**
 * The restart rule (docs/cluster-design.md §4), run when an owner starts and whenever it takes a
 * tenant: each tenant's consumer is kept only if it is exactly where the database is; otherwise
 * it is deleted and added again right after the sequence the database holds (`opt_start_seq`
 * cannot change in place). A batch left in flight by a crash is thus delivered again at once,
 * not after the ack wait. Runs 20 tenants at a time.
 */
export async function ensureConsumers(
  bus: BusConnection,
  tenants: ReadonlyMap<string, number | null>,
  maxAckPending: number,
): Promise<Map<string, ConsumerVerdict>> {
  const jsm = await bus.manager();
  const verdicts = new Map<string, ConsumerVerdict>();
  const queue = [...tenants];
  const setRight = async (tenantId: string, lastSeq: number | null): Promise<ConsumerVerdict> => {
    const verdict = await verdictOf(jsm, tenantId, lastSeq, maxAckPending);
    if (verdict !== 'kept') {
      if (verdict !== 'missing') await jsm.consumers.delete(EVENTS_STREAM, durableName(tenantId));
      await jsm.consumers.add(EVENTS_STREAM, consumerConfig(tenantId, maxAckPending, lastSeq));
      componentLog('owner').info(
        { tenant_id: tenantId, reason: verdict, start_seq: (lastSeq ?? 0) + 1 },
        'consumer (re)created at the sequence after the database',
      );
    }
    return verdict;
  };
  const worker = async () => {
    for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
      const [tenantId, lastSeq] = next;
      for (let attempt = 1; ; attempt++) {
        try {
          verdicts.set(tenantId, await setRight(tenantId, lastSeq));
          break;
        } catch (error) {
          // The consumer found in the way is judged by the rule again, as the server has it now.
          if (!NAME_IN_USE.test((error as Error).message) || attempt >= NAME_IN_USE_ATTEMPTS)
            throw error;
          await sleep(NAME_IN_USE_PAUSE_MS * attempt);
        }
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_PARALLEL, queue.length) }, worker));
  return verdicts;
}
