import { z } from 'zod';
import { PayloadTooLargeError, ValidationError } from '../errors.js';
import {
  asRejection,
  checkBuilt,
  type EventCatalog,
  type Fault,
  faultError,
  type IntakeScope,
} from './accept.js';
import { type BatchOutcome, bodyFault, parseBody } from './batch-intake.js';
import { MAX_BATCH_EVENTS } from './envelope.js';
import { encodeLines, type LandingLine } from './landing-writer.js';
import { SegmentMapper, type SegmentType } from './segment-spec.js';

/** A Segment request always puts events in one workspace: its write key's. */
export interface WorkspaceScope extends IntakeScope {
  workspaceId: string;
}

/** A Segment request as it arrived, without its body. */
export interface SegmentRequest {
  scope: WorkspaceScope;
  receivedAt: string;
  collectorId: string;
}

/**
 * A `/v1/batch` request with its body as it arrived, to be parsed on a worker thread. Bytes, not
 * text: V8 makes a string of 128 KiB or more ten times slower than a smaller one (it allocates
 * it on pages of its own), and a batch of 500 messages from analytics-node is 180 KiB; decoded
 * only where it is parsed, it is made once instead of three times (decoded, sent, received).
 */
export interface SegmentBatchRequest extends SegmentRequest {
  body: Uint8Array;
}

/** A body's bytes parsed as JSON (UTF-8, a malformed sequence read as U+FFFD as Fastify does). */
export function parseBytes(body: Uint8Array): unknown {
  return parseBody(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
}

const batchBody = z.object({
  batch: z.array(z.unknown(), { error: 'must be an array of messages' }),
  sentAt: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' }).nullish(),
});

/** The `writeKey` a body names, for a request without an Authorization header. */
export function writeKeyIn(body: unknown): string | undefined {
  if (typeof body !== 'object' || body === null || !Object.hasOwn(body, 'writeKey')) {
    return undefined;
  }
  const key: unknown = (body as { writeKey: unknown }).writeKey;
  return typeof key === 'string' && key !== '' ? key : undefined;
}

/**
 * Maps each message to an envelope (segment-spec.ts) and checks it as server events are checked,
 * one message after the other, so what a message needed is garbage before the next is read;
 * faults of both steps are reported by the message's index in the request.
 */
function intakeMessages(
  catalog: EventCatalog,
  messages: unknown[],
  endpointType: SegmentType | null,
  request: SegmentRequest,
  batchSentAt?: string | null,
): { lines: LandingLine[]; faults: (Fault & { index: number })[] } {
  const mapper = new SegmentMapper({
    tenantId: request.scope.tenantId,
    workspaceId: request.scope.workspaceId,
    receivedAtMs: Date.parse(request.receivedAt),
    ...(batchSentAt != null ? { batchSentAtMs: Date.parse(batchSentAt) } : {}),
  });
  const lines: LandingLine[] = [];
  const faults: (Fault & { index: number })[] = [];
  for (let index = 0; index < messages.length; index += 1) {
    const envelope = mapper.toEnvelope(messages[index], endpointType);
    const outcome =
      'code' in envelope
        ? envelope
        : checkBuilt(catalog, envelope, request.scope, request.receivedAt, request.collectorId);
    if ('text' in outcome) lines.push(outcome);
    else faults.push({ index, ...outcome });
  }
  return { lines, faults };
}

/** A parsed `/v1/batch` body: at most 1,000 messages, each accepted or refused on its own. */
export function checkSegmentBatchBody(
  body: unknown,
  request: SegmentRequest,
  catalog: EventCatalog,
): BatchOutcome {
  const shape = batchBody.safeParse(body);
  if (!shape.success) throw bodyFault(shape.error);
  const { batch, sentAt } = shape.data;
  if (batch.length > MAX_BATCH_EVENTS) {
    throw new PayloadTooLargeError(`a batch holds at most ${MAX_BATCH_EVENTS} messages`);
  }
  const { lines, faults } = intakeMessages(catalog, batch, null, request, sentAt);
  return { accepted: lines.length, rejected: faults.map(asRejection), chunks: encodeLines(lines) };
}

export function checkSegmentBatch(
  request: SegmentBatchRequest,
  catalog: EventCatalog,
): BatchOutcome {
  return checkSegmentBatchBody(parseBytes(request.body), request, catalog);
}

/** The body of `/v1/track`, `/v1/identify`, …: one message, whose fault refuses the request. */
export function checkSegmentMessage(
  body: unknown,
  endpointType: SegmentType,
  request: SegmentRequest,
  catalog: EventCatalog,
): LandingLine[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw ValidationError.field('body', 'must be one message (a JSON object)');
  }
  const { lines, faults } = intakeMessages(catalog, [body], endpointType, request);
  const [fault] = faults;
  if (fault) throw faultError(fault, 'server');
  return lines;
}
