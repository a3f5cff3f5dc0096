import { z } from 'zod';
import { PayloadTooLargeError, ValidationError } from '../../errors.js';
import type { Intake } from '../../landing-format.js';
import {
  asRejection,
  checkBuilt,
  type EventCatalog,
  type Fault,
  faultError,
  type IntakeScope,
} from '../accept.js';
import { type BatchOutcome, bodyFault, parseBody } from '../batch-intake.js';
import { MAX_BATCH_EVENTS } from '../envelope.js';
import { acceptedAs, type SinkForm } from '../event-sink.js';
import type { LandingLine } from '../landing-writer.js';
import { type TrackingCall, TrackingMapper } from './spec.js';

/**
 * A Tracking API request always puts events in one workspace, its write key's, and its lines
 * name the API they came through.
 */
export interface WorkspaceScope extends IntakeScope {
  workspaceId: string;
  intake: Intake;
}

/** A Tracking API request as it arrived, without its body. */
export interface TrackingRequest {
  scope: WorkspaceScope;
  receivedAt: string;
  collectorId: string;
  /** How the collector's sink takes the accepted lines. */
  form: SinkForm;
}

/**
 * A `/v1/batch` request with its body as text, to be parsed on a worker thread when large. Text
 * as the native batch endpoints take it, not bytes moved to the worker: a body kept as a Buffer
 * is memory outside V8's heap, and a request thread receiving 180 KB bodies at a few hundred a
 * second spent three times the time in garbage collection that text costs; the Segment batch
 * rate went from 0.7 of the native batch's to par (docs/benchmarks.md, issue 19).
 */
export interface TrackingBatchRequest extends TrackingRequest {
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
 * Maps each message to an envelope (tracking-api/spec.ts) and checks it as server events are checked,
 * one message after the other, so what a message needed is garbage before the next is read;
 * faults of both steps are reported by the message's index in the request.
 */
function intakeMessages(
  catalog: EventCatalog,
  messages: unknown[],
  endpointType: TrackingCall | null,
  request: TrackingRequest,
  batchSentAt?: string | null,
): { lines: LandingLine[]; faults: (Fault & { index: number })[] } {
  const mapper = new TrackingMapper({
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
export function checkTrackingBatchBody(
  body: unknown,
  request: TrackingRequest,
  catalog: EventCatalog,
): BatchOutcome {
  const shape = batchBody.safeParse(body);
  if (!shape.success) throw bodyFault(shape.error);
  const { batch, sentAt } = shape.data;
  if (batch.length > MAX_BATCH_EVENTS) {
    throw new PayloadTooLargeError(`a batch holds at most ${MAX_BATCH_EVENTS} messages`);
  }
  const { lines, faults } = intakeMessages(catalog, batch, null, request, sentAt);
  return {
    accepted: lines.length,
    rejected: faults.map(asRejection),
    events: acceptedAs(request.form, lines),
  };
}

export function checkTrackingBatch(
  request: TrackingBatchRequest,
  catalog: EventCatalog,
): BatchOutcome {
  return checkTrackingBatchBody(parseBody(request.body), request, catalog);
}

/** The body of `/v1/track`, `/v1/identify`, …: one message, whose fault refuses the request. */
export function checkTrackingMessage(
  body: unknown,
  endpointType: TrackingCall,
  request: TrackingRequest,
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
