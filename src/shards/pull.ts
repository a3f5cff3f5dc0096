import { randomBytes } from 'node:crypto';
import type { Msg, Subscription } from '@nats-io/transport-node';
import type { BusConnection } from '../bus/connect.js';
import { INBOX_PREFIX } from '../bus/connect.js';
import { EVENTS_STREAM } from '../bus/subjects.js';

/** One message a pull returned: what an owner reads of it, and its acknowledgement. */
export interface PulledMessage {
  subject: string;
  /** Its stream sequence. */
  seq: number;
  data: Uint8Array;
  /** When the stream stored it. */
  time: Date;
  /** Acknowledges it (an `AckAll` consumer: and every earlier message delivered to it). */
  ack(): void;
}

/** What one pull asks for: at most `batch` messages and `maxBytes` bytes, for `expiresMs`. */
export interface PullRequest {
  batch: number;
  maxBytes: number;
  expiresMs: number;
}

export interface Pulled {
  messages: PulledMessage[];
  /** Why the pull ended before its end: the messages before it are the first it was given. */
  failure: Error | null;
}

/** The server's idle heartbeat within a waiting pull. */
const HEARTBEAT_MS = 1000;
/**
 * How long a pull may hear nothing before it counts as lost (a node gone, a consumer deleted):
 * five heartbeats. The client's own fetch gives up after two, which a busy two-core machine
 * missed (docs/benchmarks.md, "Cluster"); time this process spent elsewhere with its socket
 * unread is not counted as silence (`pull`).
 */
const SILENCE_MS = 5 * HEARTBEAT_MS;
const NANOS_PER_MS = 1_000_000;
/** Statuses that end a pull as asked: expired (408), or its bytes reached (409). */
const ENDED_AS_ASKED = /request timeout|message size exceeds maxbytes|no messages/i;

/**
 * Where an acknowledgement goes tells the message's place:
 * `$JS.ACK.<stream>.<consumer>.<delivered>.<stream seq>.<consumer seq>.<time ns>.<pending>`,
 * or with a domain and an account hash after `$JS.ACK` (newer servers).
 */
function placeOf(reply: string): { seq: number; time: Date } {
  const tokens = reply.split('.');
  const at = tokens.length === 9 ? 5 : 7;
  return {
    seq: Number(tokens[at]),
    time: new Date(Number(BigInt(tokens[at + 2] ?? '0') / BigInt(NANOS_PER_MS))),
  };
}

function pulledMessage(msg: Msg): PulledMessage {
  const { seq, time } = placeOf(msg.reply ?? '');
  return { subject: msg.subject, seq, data: msg.data, time, ack: () => msg.respond() };
}

/**
 * One pull request to a durable consumer of the events stream, with a count and a byte limit
 * both: the 3.x client sends no count with `max_bytes`, and its fetch of a pull that reached its
 * count then waits for heartbeats that never come (measured: 3 s, then "heartbeats missed").
 * Resolves when the count is reached, the server ends the pull (expired, or the next message
 * would pass the bytes), or nothing is heard for `SILENCE_MS`; never rejects.
 */
export function pull(bus: BusConnection, durable: string, request: PullRequest): Promise<Pulled> {
  return new Promise((resolve) => {
    const messages: PulledMessage[] = [];
    const inbox = `${INBOX_PREFIX[bus.role]}.pull.${randomBytes(8).toString('hex')}`;
    let heardAt = performance.now();
    let done = false;
    let subscription: Subscription | undefined;
    let watch: NodeJS.Timeout | undefined;
    const finish = (failure: Error | null) => {
      if (done) return;
      done = true;
      clearInterval(watch);
      subscription?.unsubscribe();
      resolve({ messages, failure });
    };
    // The server refuses a heartbeat of more than half the pull's life.
    const heartbeatMs = Math.min(HEARTBEAT_MS, request.expiresMs / 2);
    try {
      subscription = bus.nc.subscribe(inbox, {
        callback: (error, msg) => {
          if (error) return finish(error);
          heardAt = performance.now();
          const status = msg.headers?.code ?? 0;
          if (status === 100) return;
          if (status !== 0) {
            const description = msg.headers?.description ?? '';
            return finish(
              ENDED_AS_ASKED.test(description)
                ? null
                : new Error(`pull ended: ${status} ${description}`),
            );
          }
          messages.push(pulledMessage(msg));
          if (messages.length >= request.batch) finish(null);
        },
      });
      let checkedAt = performance.now();
      watch = setInterval(() => {
        const now = performance.now();
        // How much later than asked this check runs: the time this process held its event loop.
        const heldMs = Math.max(0, now - checkedAt - heartbeatMs);
        checkedAt = now;
        if (now - heardAt <= SILENCE_MS) return;
        // Timers run before the socket is read: what came while this process was busy elsewhere
        // (a batch, on a loaded machine) is read first, and counts as heard.
        setImmediate(() => {
          const silentMs = performance.now() - heardAt;
          if (silentMs > SILENCE_MS)
            finish(
              new Error(
                `heartbeats missed: nothing heard for ${Math.round(silentMs)} ms (this process held its event loop ${Math.round(heldMs)} ms of it)`,
              ),
            );
        });
      }, heartbeatMs);
      bus.nc.publish(
        `$JS.API.CONSUMER.MSG.NEXT.${EVENTS_STREAM}.${durable}`,
        JSON.stringify({
          batch: request.batch,
          max_bytes: request.maxBytes,
          expires: request.expiresMs * NANOS_PER_MS,
          idle_heartbeat: heartbeatMs * NANOS_PER_MS,
        }),
        { reply: inbox },
      );
    } catch (error) {
      // The connection closed or draining: a pull that failed at once.
      finish(error as Error);
    }
  });
}
