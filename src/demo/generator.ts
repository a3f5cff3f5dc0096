import type { EventSource } from '../landing-format.js';

/** A small, fast, seeded PRNG (mulberry32): the same seed gives the same store, byte for byte. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface GeneratedEvent {
  source: EventSource;
  event: {
    envelop_version: '1.0';
    id: string;
    name: string;
    tenant_id: string;
    workspace_id: string;
    anon_id?: string;
    occured_at: string;
    properties: Record<string, unknown>;
  };
}

export interface GeneratorOptions {
  seed: number;
  tenantId: string;
  workspaceIds: readonly string[];
  events: number;
  /** Distinct visitors; about a third of them sign up. */
  visitors: number;
  /** First event time; events then step forward 1–5 s each. */
  start: Date;
  /** Instead, spread the events over `start` to about `end`, steps varying the same way. */
  end?: Date;
}

const CATEGORIES = ['shoes', 'bags', 'hats', 'jackets', 'socks', 'watches'];
const PLACEHOLDER_EMAILS = ['test@test.com', 'n/a', 'none'];

interface Visitor {
  cookie: string;
  workspaceId: string;
  email: string | null;
  phone: string | null;
  orders: number;
}

/**
 * A realistic store's sequence of events: visitors browse from a cookie (browser events), some sign up
 * and link an email and an Indian mobile number (server events), buyers come back for repeat
 * orders and on new devices, about 2% of orders are delivered twice, and some sign-ups carry a
 * placeholder email. It may yield one event past `events` when a pair is due.
 */
export function* generateEvents(options: GeneratorOptions): Generator<GeneratedEvent> {
  const random = seededRandom(options.seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T;
  const visitors: Visitor[] = Array.from({ length: options.visitors }, (_, index) => ({
    cookie: `v${options.seed}-${index}`,
    workspaceId: pick(options.workspaceIds),
    email: null,
    phone: null,
    orders: 0,
  }));
  const meanStepMs = options.end
    ? (options.end.getTime() - options.start.getTime()) / options.events
    : 3000;
  const minStepMs = Math.floor(meanStepMs / 3);
  const stepRangeMs = Math.floor((meanStepMs * 4) / 3);
  let clock = options.start.getTime();
  let sequence = 0;
  const envelope = (
    visitor: Visitor,
    name: string,
    properties: Record<string, unknown>,
    withAnon: boolean,
  ) => {
    clock += minStepMs + Math.floor(random() * stepRangeMs);
    sequence += 1;
    return {
      envelop_version: '1.0' as const,
      id: `evt-${options.seed}-${sequence}`,
      name,
      tenant_id: options.tenantId,
      workspace_id: visitor.workspaceId,
      ...(withAnon ? { anon_id: `cookie:${visitor.cookie}` } : {}),
      occured_at: new Date(clock).toISOString(),
      properties,
    };
  };

  let produced = 0;
  while (produced < options.events) {
    const visitor = pick(visitors);
    const roll = random();
    if (visitor.email === null && roll < 0.08) {
      const index = visitors.indexOf(visitor);
      visitor.email =
        random() < 0.05 ? pick(PLACEHOLDER_EMAILS) : `shopper${index}@mail${index % 7}.example`;
      visitor.phone = `9${String(100_000_000 + index * 7919).slice(0, 9)}`;
      const identifiers = {
        email: ` ${visitor.email.toUpperCase()} `,
        phone: visitor.phone,
        cookie: visitor.cookie,
      };
      yield { source: 'server', event: envelope(visitor, 'signed_up', { identifiers }, false) };
      produced += 1;
    } else if (visitor.email !== null && roll < 0.25) {
      visitor.orders += 1;
      const order = envelope(
        visitor,
        'order_completed',
        {
          identifiers: { email: visitor.email },
          order_id: `o-${visitor.cookie}-${visitor.orders}`,
          total: Math.round(20 + random() * 480),
          category: pick(CATEGORIES),
        },
        false,
      );
      yield { source: 'server', event: order };
      produced += 1;
      if (random() < 0.02 && produced < options.events) {
        yield { source: 'server', event: { ...order, id: `${order.id}-retry` } };
        produced += 1;
      }
    } else if (visitor.email !== null && roll < 0.3) {
      // A known shopper on a new device: browses anonymously, then signs in, which merges the
      // new cookie's profile into theirs.
      visitor.cookie = `${visitor.cookie}-d${sequence}`;
      yield {
        source: 'browser',
        event: envelope(visitor, 'product_viewed', { category: pick(CATEGORIES) }, true),
      };
      const identifiers = { email: visitor.email, cookie: visitor.cookie };
      yield { source: 'server', event: envelope(visitor, 'signed_up', { identifiers }, false) };
      produced += 2;
    } else if (roll < 0.6) {
      yield {
        source: 'browser',
        event: envelope(visitor, 'product_viewed', { category: pick(CATEGORIES) }, true),
      };
      produced += 1;
    } else {
      yield {
        source: 'browser',
        event: envelope(visitor, 'page_viewed', { path: `/p/${Math.floor(random() * 500)}` }, true),
      };
      produced += 1;
    }
  }
}
