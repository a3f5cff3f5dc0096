import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { eventNameSchema } from '../../ids.js';
import { consentOfContext } from '../../privacy/consent.js';
import type { Fault } from '../accept.js';
import type { Envelope } from '../envelope.js';
import { MessageIds } from '../message-id.js';

/**
 * Segment's tracking API (segment.com/docs/connections/spec) mapped onto the envelope of one
 * workspace; docs/decisions.md "Segment-spec tracking API" states every rule.
 */
export const TRACKING_CALLS = ['track', 'identify', 'page', 'screen', 'alias', 'group'] as const;
export type TrackingCall = (typeof TRACKING_CALLS)[number];

/** Where a request's messages go and when it arrived. */
export interface TrackingScope {
  tenantId: string;
  workspaceId: string;
  /** The collector's clock at the request, in ms: the `receivedAt` of Segment's skew rule. */
  receivedAtMs: number;
  /** The batch's `sentAt` in ms, where the batch has one (a message's own wins). */
  batchSentAtMs?: number;
}

const timestamp = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });
/** Checked, not copied: the envelope's properties are this object itself (see `toEnvelope`). */
const plainObject = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { error: 'must be an object' },
);
/** Segment's ids are strings; its libraries have sent numbers too. */
const someId = z.union([z.string(), z.number()], { error: 'must be a string or a number' });

/** The fields cds reads; the rest of a message (integrations, context.library, …) is not kept. */
export const messageSchema = z.object({
  type: z.enum(TRACKING_CALLS, { error: `must be one of ${TRACKING_CALLS.join(', ')}` }).optional(),
  messageId: z.string({ error: 'must be a string' }).nullish(),
  userId: someId.nullish(),
  anonymousId: someId.nullish(),
  previousId: someId.nullish(),
  groupId: someId.nullish(),
  event: z.string({ error: 'must be a string' }).nullish(),
  name: z.string({ error: 'must be a string' }).nullish(),
  category: z.string({ error: 'must be a string' }).nullish(),
  properties: plainObject.nullish(),
  traits: plainObject.nullish(),
  context: z.object({ traits: plainObject.nullish() }, { error: 'must be an object' }).nullish(),
  timestamp: timestamp.nullish(),
  originalTimestamp: timestamp.nullish(),
  sentAt: timestamp.nullish(),
});

type Message = z.infer<typeof messageSchema>;

const TIMESTAMP = timestamp.def.pattern as RegExp;
const absent = (value: unknown) => value === undefined || value === null;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isText = (value: unknown) => absent(value) || typeof value === 'string';
const isId = (value: unknown) => isText(value) || typeof value === 'number';
const isObjectOrAbsent = (value: unknown) => absent(value) || isObject(value);
const isTimestamp = (value: unknown) =>
  absent(value) || (typeof value === 'string' && TIMESTAMP.test(value));

/**
 * A message as `messageSchema` reads it, when each field has its type (as nearly every message
 * has), read in place: zod's copy of each message took a sixth of the time a batch takes to
 * check. Null for any other message, which `messageSchema` then refuses, naming the field. A
 * test holds the two to the same verdict.
 */
export function readMessage(raw: unknown): Message | null {
  if (!isObject(raw)) return null;
  const { context } = raw;
  const valid =
    (raw.type === undefined || TRACKING_CALLS.includes(raw.type as TrackingCall)) &&
    isText(raw.messageId) &&
    isId(raw.userId) &&
    isId(raw.anonymousId) &&
    isId(raw.previousId) &&
    isId(raw.groupId) &&
    isText(raw.event) &&
    isText(raw.name) &&
    isText(raw.category) &&
    isObjectOrAbsent(raw.properties) &&
    isObjectOrAbsent(raw.traits) &&
    (absent(context) || (isObject(context) && isObjectOrAbsent(context.traits))) &&
    isTimestamp(raw.timestamp) &&
    isTimestamp(raw.originalTimestamp) &&
    isTimestamp(raw.sentAt);
  return valid ? (raw as Message) : null;
}

/**
 * A `track` event's name as an event type name: lowercase, each run of characters other than
 * a–z and 0–9 one `_`, none at either end (`Order Completed` → `order_completed`).
 */
export function trackEventName(event: string): string {
  return event
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
}

/** 0001-01-01 to 9999-12-31: what `occured_at` may hold, as ingest reads it as a timestamp. */
const EARLIEST_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');
const DAY_MS = 86_400_000;

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

/** An identifier value ingest can key; anything else is left out. */
function identifierValue(value: unknown): string | number | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  return typeof value === 'number' ? value : undefined;
}

/**
 * The identifiers of a message: `userId` as `user_id`, an email and a phone from the traits
 * (identify: its `traits`, then `context.traits`; the others: `context.traits`), and an alias's
 * `previousId` as the `cookie` it links to the user (its anonymous id, as Segment's libraries
 * send it). `anonymousId` becomes the envelope's `anon_id`, not an entry here.
 */
function identifiersOf(type: TrackingCall, message: Message): Record<string, string | number> {
  const identifiers: Record<string, string | number> = {};
  const userId = identifierValue(message.userId);
  if (userId !== undefined) identifiers.user_id = userId;
  const ownTraits = type === 'identify' ? message.traits : undefined;
  const contextTraits = message.context?.traits;
  const email = identifierValue(ownTraits?.email) ?? identifierValue(contextTraits?.email);
  if (email !== undefined) identifiers.email = email;
  const phone = identifierValue(ownTraits?.phone) ?? identifierValue(contextTraits?.phone);
  if (phone !== undefined) identifiers.phone = phone;
  if (type === 'alias') {
    const previousId = identifierValue(message.previousId);
    if (previousId !== undefined) identifiers.cookie = previousId;
  }
  return identifiers;
}

/**
 * The event's properties: `properties` (track, page, screen) or `traits` (identify, group), the
 * page's or screen's `name` and `category`, and the group's `groupId`. A trait `email` or
 * `phone` is an identifier (a group's: the company's), never a plain property. `identifiers` is
 * always the one built here, so a message cannot name identifiers of its own choosing.
 */
function propertiesOf(
  type: TrackingCall,
  message: Message,
  identifiers: Record<string, string | number>,
  consent: Map<string, boolean> | null,
): Record<string, unknown> {
  const properties =
    (type === 'identify' || type === 'group' ? message.traits : message.properties) ?? {};
  if (type === 'identify' || type === 'group') {
    delete properties.email;
    delete properties.phone;
  }
  if (type === 'page' || type === 'screen') {
    if (message.name != null) properties.name = message.name;
    if (message.category != null) properties.category = message.category;
  }
  if (type === 'group' && message.groupId != null) properties.group_id = message.groupId;
  properties.identifiers = identifiers;
  if (consent) {
    // Category names are data: a map without a prototype, as JSON writes it.
    const choices: Record<string, boolean> = Object.create(null);
    for (const [category, granted] of consent) choices[category] = granted;
    properties.consent = choices;
  }
  return properties;
}

function invalid(path: string, reason: string): Fault {
  return { code: 'invalid_event', path, reason };
}

/**
 * Maps the messages of one request onto envelopes of its workspace. It keeps what messages of a
 * batch share (their event names, the day part of their times), as a batch of 500 may take no
 * more than a quarter longer than the same events sent as envelopes (`npm run bench`).
 */
export class TrackingMapper {
  private readonly names = new Map<string, string | Fault>();
  private readonly ids: MessageIds;
  private dayStartMs = Number.NaN;
  private dayText = '';
  /** No timestamp starts with a NUL, so the first one read sets the day. */
  private readDayText = '\0';
  private readDayStartMs = Number.NaN;

  constructor(private readonly scope: TrackingScope) {
    this.ids = new MessageIds(scope.tenantId, scope.workspaceId);
  }

  /**
   * One message as an envelope, or why it cannot be one. `endpointType` is the endpoint's
   * (`/v1/track`, …); on `/v1/batch` it is null and each message names its own. The envelope
   * still goes through the checks every server event takes (`intakeBuilt`). The message is
   * parsed JSON owned by the request: its `properties` (or `traits`) object becomes the
   * envelope's, changed in place rather than copied.
   */
  toEnvelope(raw: unknown, endpointType: TrackingCall | null): Envelope | Fault {
    let message = readMessage(raw);
    if (message === null) {
      const parsed = messageSchema.safeParse(raw);
      if (!parsed.success) {
        const [issue] = parsed.error.issues;
        return invalid(issue?.path.join('.') || 'message', issue?.message ?? 'is invalid');
      }
      message = parsed.data;
    }
    const type = endpointType ?? message.type;
    if (type === undefined) return invalid('type', `must be one of ${TRACKING_CALLS.join(', ')}`);
    const name = type === 'track' ? this.trackName(message.event) : type;
    if (typeof name !== 'string') return name;
    const anonymousId = message.anonymousId === '' ? undefined : message.anonymousId?.toString();
    // The envelope's anon_id is `cookie:` and this: at most 256 characters, on one line.
    if (anonymousId !== undefined && !/^.{1,249}$/.test(anonymousId)) {
      return invalid('anonymousId', 'must be at most 249 characters, on one line');
    }
    const at = this.occurredAtMs(message);
    if (!(at >= EARLIEST_MS && at <= LATEST_MS)) {
      return invalid('timestamp', 'corrected by sentAt, falls outside the years 0001 to 9999');
    }
    const identifiers = identifiersOf(type, message);
    if (anonymousId === undefined && Object.keys(identifiers).length === 0) {
      return {
        code: 'no_identifiers',
        path: 'userId',
        reason: 'the message has no userId or anonymousId (nor an email or phone trait)',
      };
    }
    const { tenantId, workspaceId } = this.scope;
    // One shape for every envelope: an absent anon_id is undefined, which JSON leaves out.
    return {
      envelop_version: '1.0',
      id: message.messageId ? this.ids.idOf(message.messageId) : randomUUID(),
      name,
      tenant_id: tenantId,
      workspace_id: workspaceId,
      anon_id: anonymousId === undefined ? undefined : `cookie:${anonymousId}`,
      occured_at: this.isoTime(at),
      properties: propertiesOf(
        type,
        message,
        identifiers,
        consentOfContext((raw as { context?: unknown }).context),
      ),
    };
  }

  /**
   * When the event happened, as Segment corrects a device's clock: the device's `timestamp` (or
   * `originalTimestamp`, RudderStack's name for it) moved by how far the device's `sentAt` was
   * from the collector's clock, `receivedAt − (sentAt − timestamp)`; without `sentAt` the
   * timestamp as sent; without a timestamp the time the request arrived.
   */
  private occurredAtMs(message: Message): number {
    const sent = message.timestamp ?? message.originalTimestamp;
    if (sent == null) return this.scope.receivedAtMs;
    const sentMs = this.timeOf(sent);
    const sentAtMs =
      message.sentAt != null ? this.timeOf(message.sentAt) : this.scope.batchSentAtMs;
    return sentAtMs === undefined ? sentMs : this.scope.receivedAtMs - (sentAtMs - sentMs);
  }

  /**
   * `Date.parse` of a checked ISO 8601 timestamp; in JSON's own form (`2026-03-01T10:00:00.000Z`)
   * on a day met before, read from its digits, at a sixth of the cost.
   */
  private timeOf(text: string): number {
    if (text.length !== 24 || text.charCodeAt(23) !== 90 /* Z */) return Date.parse(text);
    if (!text.startsWith(this.readDayText)) {
      this.readDayText = text.slice(0, 11);
      this.readDayStartMs = Date.parse(`${this.readDayText}00:00:00.000Z`);
    }
    // '0' is 48: each two-digit field is 528 (48 × 11) over its digits' codes, the milliseconds 5328.
    return (
      this.readDayStartMs +
      (text.charCodeAt(11) * 10 + text.charCodeAt(12) - 528) * 3_600_000 +
      (text.charCodeAt(14) * 10 + text.charCodeAt(15) - 528) * 60_000 +
      (text.charCodeAt(17) * 10 + text.charCodeAt(18) - 528) * 1000 +
      text.charCodeAt(20) * 100 +
      text.charCodeAt(21) * 10 +
      text.charCodeAt(22) -
      5328
    );
  }

  private trackName(event: string | null | undefined): string | Fault {
    if (event == null) return invalid('event', 'is required on a track message');
    let name = this.names.get(event);
    if (name === undefined) {
      const mapped = trackEventName(event);
      name = eventNameSchema.safeParse(mapped).success
        ? mapped
        : invalid(
            'event',
            `${JSON.stringify(event)} becomes ${JSON.stringify(mapped)}, which is no event type name (a letter, then letters, digits and _, at most 128)`,
          );
      this.names.set(event, name);
    }
    return name;
  }

  /** `Date.prototype.toISOString`, at a seventh of its cost: the day part is kept. */
  private isoTime(ms: number): string {
    const dayStartMs = Math.floor(ms / DAY_MS) * DAY_MS;
    if (dayStartMs !== this.dayStartMs) {
      this.dayStartMs = dayStartMs;
      this.dayText = new Date(dayStartMs).toISOString().slice(0, 11);
    }
    let rest = ms - dayStartMs;
    const hours = Math.floor(rest / 3_600_000);
    rest -= hours * 3_600_000;
    const minutes = Math.floor(rest / 60_000);
    rest -= minutes * 60_000;
    const seconds = Math.floor(rest / 1000);
    return `${this.dayText}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(rest - seconds * 1000)}Z`;
  }
}
