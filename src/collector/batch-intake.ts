import secureJson from 'secure-json-parse';
import { z } from 'zod';
import { BadRequestError, PayloadTooLargeError, ValidationError } from '../errors.js';
import {
  asRejection,
  type EventCatalog,
  type IntakeScope,
  intake,
  type Rejection,
} from './accept.js';
import { MAX_BATCH_EVENTS } from './envelope.js';
import { type AcceptedLines, acceptedAs, type SinkForm } from './event-sink.js';

const batchBody = z.object({
  events: z.array(z.unknown(), { error: 'must be an array of events' }),
});

/** One batch request as it arrived: the raw body and what it is checked against. */
export interface BatchRequest {
  body: string;
  scope: IntakeScope;
  receivedAt: string;
  collectorId: string;
  /** How the collector's sink takes the accepted lines. */
  form: SinkForm;
}

/** The accepted events, in the form the sink takes, and the refused ones by index. */
export interface BatchOutcome {
  accepted: number;
  rejected: Rejection[];
  events: AcceptedLines;
}

/** A body read as text, parsed as JSON is everywhere in the API: prototype keys are refused. */
export function parseBody(body: string): unknown {
  if (body === '') throw BadRequestError.emptyJson();
  try {
    return secureJson.parse(body);
  } catch (error) {
    throw BadRequestError.invalidJson((error as Error).message);
  }
}

/** A body of the wrong shape, every issue named by its path. */
export function bodyFault(error: z.ZodError): ValidationError {
  return new ValidationError(
    error.issues.map((issue) => ({ path: issue.path.join('.') || 'body', message: issue.message })),
  );
}

/**
 * Parses and checks a batch body (design §8): JSON (prototype keys refused, as everywhere in the
 * API), an `events` array of at most 1,000, then every event on its own.
 */
export function checkBatch(request: BatchRequest, catalog: EventCatalog): BatchOutcome {
  const shape = batchBody.safeParse(parseBody(request.body));
  if (!shape.success) throw bodyFault(shape.error);
  const { events } = shape.data;
  if (events.length > MAX_BATCH_EVENTS) {
    throw new PayloadTooLargeError(`a batch holds at most ${MAX_BATCH_EVENTS} events`);
  }
  const { lines, faults } = intake(
    catalog,
    events,
    request.scope,
    request.receivedAt,
    request.collectorId,
  );
  return {
    accepted: lines.length,
    rejected: faults.map(asRejection),
    events: acceptedAs(request.form, lines),
  };
}
