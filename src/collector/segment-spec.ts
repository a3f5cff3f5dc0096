import { createHash, randomUUID } from 'node:crypto';
import { z } from 'zod';
import { eventNameSchema } from '../ids.js';
import type { Fault } from './accept.js';
import type { Envelope } from './envelope.js';

/**
 * Segment's tracking API (segment.com/docs/connections/spec) mapped onto the envelope of one
 * workspace; docs/decisions.md "Segment-spec tracking API" states every rule.
 */
export const SEGMENT_TYPES = ['track', 'identify', 'page', 'screen', 'alias', 'group'] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

/** Where a message goes and when its request arrived. */
export interface SegmentScope {
  tenantId: string;
  workspaceId: string;
  /** The collector's clock at the request, in ms: the `receivedAt` of Segment's skew rule. */
  receivedAtMs: number;
  /** The batch's `sentAt` in ms, where the batch has one (a message's own wins). */
  batchSentAtMs?: number;
}

const timestamp = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' });
const plainObject = z.record(z.string(), z.unknown(), { error: 'must be an object' });
/** Segment's ids are strings; its libraries have sent numbers too. */
const someId = z.union([z.string(), z.number()], { error: 'must be a string or a number' });

/** The fields cds reads; the rest of a message (integrations, context.library, …) is not kept. */
const messageSchema = z.object({
  type: z.enum(SEGMENT_TYPES, { error: `must be one of ${SEGMENT_TYPES.join(', ')}` }).optional(),
  messageId: z.string({ error: 'must be a string' }).nullish(),
  userId: someId.nullish(),
  // The envelope's anon_id is `cookie:` and this, at most 256 characters, on one line.
  anonymousId: z
    .union([
      z
        .string()
        .max(249, 'must be at most 249 characters')
        .regex(/^.*$/, 'must not hold a line break'),
      z.number().transform(String),
    ])
    .nullish(),
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Fixed for ever: changing it would give every retried message a new id, so a second copy. */
const MESSAGE_ID_NAMESPACE = Buffer.from('4b2365d01c064090a9bee7d1d7f1d508', 'hex');

/**
 * A `messageId` that is no UUID (`node-next-1668208232027-743be593-…` from analytics-node) as a
 * name-based UUID (RFC 9562 version 8, SHA-256 of a fixed namespace and the workspace's
 * `[tenant, workspace, messageId]`), so a retried message keeps its id and is stored once.
 */
export function messageUuid(tenantId: string, workspaceId: string, messageId: string): string {
  if (UUID.test(messageId)) return messageId;
  const digest = createHash('sha256')
    .update(MESSAGE_ID_NAMESPACE)
    .update(JSON.stringify([tenantId, workspaceId, messageId]))
    .digest();
  digest[6] = ((digest[6] as number) & 0x0f) | 0x80;
  digest[8] = ((digest[8] as number) & 0x3f) | 0x80;
  const hex = digest.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** 0001-01-01 and 9999-12-31: what `occured_at` may hold, as ingest reads it as a timestamp. */
const EARLIEST_MS = Date.parse('0001-01-01T00:00:00.000Z');
const LATEST_MS = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * When the event happened, as Segment corrects a device's clock: the device's `timestamp` (or
 * `originalTimestamp`, RudderStack's name for it) moved by how far the device's `sentAt` was
 * from the collector's clock, `receivedAt − (sentAt − timestamp)`; without `sentAt` the
 * timestamp as sent; without a timestamp the time the request arrived.
 */
export function occurredAtMs(message: Message, scope: SegmentScope): number {
  const sent = message.timestamp ?? message.originalTimestamp;
  if (sent == null) return scope.receivedAtMs;
  const sentMs = Date.parse(sent);
  const sentAtMs = message.sentAt != null ? Date.parse(message.sentAt) : scope.batchSentAtMs;
  return sentAtMs === undefined ? sentMs : scope.receivedAtMs - (sentAtMs - sentMs);
}

function eventNameOf(type: SegmentType, message: Message): string | Fault {
  if (type !== 'track') return type;
  if (message.event == null) {
    return { code: 'invalid_event', path: 'event', reason: 'is required on a track message' };
  }
  const name = trackEventName(message.event);
  if (!eventNameSchema.safeParse(name).success) {
    return {
      code: 'invalid_event',
      path: 'event',
      reason: `${JSON.stringify(message.event)} becomes ${JSON.stringify(name)}, which is no event type name (a letter, then letters, digits and _, at most 128)`,
    };
  }
  return name;
}

/** An identifier value ingest can key; anything else is left out. */
function identifierValue(value: unknown): string | number | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  return typeof value === 'number' ? value : undefined;
}

/** `properties` without the keys cds reads as identifiers, which never sit there in plain text. */
function withoutContact(traits: Record<string, unknown>): Record<string, unknown> {
  if (!Object.hasOwn(traits, 'email') && !Object.hasOwn(traits, 'phone')) return traits;
  const { email: _email, phone: _phone, ...rest } = traits;
  return rest;
}

/**
 * The event's properties: `properties` (track, page, screen) or `traits` (identify, group), the
 * page's or screen's `name` and `category`, and the group's `groupId`; `identifiers` is always
 * the one built here, so a message cannot name identifiers of its own choosing.
 */
function propertiesOf(
  type: SegmentType,
  message: Message,
  identifiers: Record<string, string | number>,
): Record<string, unknown> {
  switch (type) {
    case 'identify':
      return { ...withoutContact(message.traits ?? {}), identifiers };
    case 'group':
      return {
        ...withoutContact(message.traits ?? {}),
        ...(message.groupId != null ? { group_id: message.groupId } : {}),
        identifiers,
      };
    case 'page':
    case 'screen':
      return {
        ...message.properties,
        ...(message.name != null ? { name: message.name } : {}),
        ...(message.category != null ? { category: message.category } : {}),
        identifiers,
      };
    default:
      return { ...message.properties, identifiers };
  }
}

/**
 * The identifiers of a message: `userId` as `user_id`, an email and a phone from the traits
 * (identify: its `traits`, then `context.traits`; the others: `context.traits`), and an alias's
 * `previousId` as the `cookie` it links to the user (its anonymous id, as Segment's libraries
 * send it). `anonymousId` becomes the envelope's `anon_id`, not an entry here.
 */
function identifiersOf(type: SegmentType, message: Message): Record<string, string | number> {
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

function invalid(issue: z.core.$ZodIssue | undefined): Fault {
  return {
    code: 'invalid_event',
    path: issue?.path.length ? issue.path.join('.') : 'message',
    reason: issue?.message ?? 'is invalid',
  };
}

/**
 * One Segment message as an envelope of the scope's workspace, or why it cannot be one. `type`
 * is the endpoint's (`/v1/track`, …); on `/v1/batch` it is null and each message names its own.
 * The envelope still goes through the checks every server event takes (`intake`).
 */
export function toEnvelope(
  raw: unknown,
  endpointType: SegmentType | null,
  scope: SegmentScope,
): Envelope | Fault {
  const parsed = messageSchema.safeParse(raw);
  if (!parsed.success) return invalid(parsed.error.issues[0]);
  const message = parsed.data;
  const type = endpointType ?? message.type;
  if (type === undefined) {
    return {
      code: 'invalid_event',
      path: 'type',
      reason: `must be one of ${SEGMENT_TYPES.join(', ')}`,
    };
  }
  const name = eventNameOf(type, message);
  if (typeof name !== 'string') return name;
  const at = occurredAtMs(message, scope);
  if (!(at >= EARLIEST_MS && at <= LATEST_MS)) {
    return {
      code: 'invalid_event',
      path: 'timestamp',
      reason: 'corrected by sentAt, falls outside the years 0001 to 9999',
    };
  }
  const identifiers = identifiersOf(type, message);
  const anonymousId = message.anonymousId || undefined;
  if (anonymousId === undefined && Object.keys(identifiers).length === 0) {
    return {
      code: 'no_identifiers',
      path: 'userId',
      reason: 'the message has no userId or anonymousId (nor an email or phone trait)',
    };
  }
  return {
    envelop_version: '1.0',
    id: message.messageId
      ? messageUuid(scope.tenantId, scope.workspaceId, message.messageId)
      : randomUUID(),
    name,
    tenant_id: scope.tenantId,
    workspace_id: scope.workspaceId,
    ...(anonymousId !== undefined ? { anon_id: `cookie:${anonymousId}` } : {}),
    occured_at: new Date(at).toISOString(),
    properties: propertiesOf(type, message, identifiers),
  };
}
