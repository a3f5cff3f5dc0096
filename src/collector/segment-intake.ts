import { z } from 'zod';
import { PayloadTooLargeError, ValidationError } from '../errors.js';
import {
  asRejection,
  type EventCatalog,
  type Fault,
  faultError,
  type IntakeScope,
  intake,
} from './accept.js';
import { type BatchOutcome, bodyFault, parseBody } from './batch-intake.js';
import { type Envelope, MAX_BATCH_EVENTS } from './envelope.js';
import { encodeLines, type LandingLine } from './landing-writer.js';
import { type SegmentScope, type SegmentType, toEnvelope } from './segment-spec.js';

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

/** A `/v1/batch` request with its body still text, so it can be parsed on a worker thread. */
export interface SegmentBatchRequest extends SegmentRequest {
  body: string;
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
 * Maps each message to an envelope (segment-spec.ts), then checks those as server events are
 * checked; faults of both steps are reported by the message's index in the request.
 */
function intakeMessages(
  catalog: EventCatalog,
  messages: unknown[],
  endpointType: SegmentType | null,
  request: SegmentRequest,
  batchSentAt?: string | null,
): { lines: LandingLine[]; faults: (Fault & { index: number })[] } {
  const scope: SegmentScope = {
    tenantId: request.scope.tenantId,
    workspaceId: request.scope.workspaceId,
    receivedAtMs: Date.parse(request.receivedAt),
    ...(batchSentAt != null ? { batchSentAtMs: Date.parse(batchSentAt) } : {}),
  };
  const envelopes: Envelope[] = [];
  const indexes: number[] = [];
  const faults: (Fault & { index: number })[] = [];
  messages.forEach((raw, index) => {
    const outcome = toEnvelope(raw, endpointType, scope);
    if ('code' in outcome) {
      faults.push({ index, ...outcome });
    } else {
      envelopes.push(outcome);
      indexes.push(index);
    }
  });
  const checked = intake(
    catalog,
    envelopes,
    request.scope,
    request.receivedAt,
    request.collectorId,
  );
  if (checked.faults.length === 0) return { lines: checked.lines, faults };
  for (const fault of checked.faults) faults.push({ ...fault, index: indexes[fault.index] ?? -1 });
  faults.sort((a, b) => a.index - b.index);
  return { lines: checked.lines, faults };
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
  return checkSegmentBatchBody(parseBody(request.body), request, catalog);
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
