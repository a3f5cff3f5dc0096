import { type BoxingKey, box } from '../bus/identifier-box.js';
import { type AppError, ForbiddenError, PayloadTooLargeError, ValidationError } from '../errors.js';
import type { EventSource, Intake } from '../landing-format.js';
import {
  browserEnvelopeSchema,
  builtLandingLineText,
  type Envelope,
  envelopeSchema,
  landingLineText,
  MAX_EVENT_BYTES,
} from './envelope.js';
import { checkEventContent } from './event-content.js';
import type { LandingLine } from './landing-writer.js';

export interface Rejection {
  index: number;
  code: string;
  message: string;
}

/** Where a request may put events: the browser headers' workspace, or a collector token's scope. */
export interface IntakeScope {
  source: EventSource;
  /** Another vendor's API the request came through (its lines record it); absent for cds's own. */
  intake?: Intake;
  tenantId: string;
  /** Browser: the header's workspace. Server: the token's workspace, or null for any of the tenant's. */
  workspaceId: string | null;
  /**
   * Cluster mode: the key each event's `properties.identifiers` is boxed to before its line is
   * written, so the events stream holds no identifier value (bus/identifier-box.ts). Absent for
   * landing files.
   */
  box?: BoxingKey;
}

/** The registry look-ups an event needs: its workspace and its event type must exist. */
export interface EventCatalog {
  hasWorkspace(tenantId: string, workspaceId: string): boolean;
  hasEventType(tenantId: string, eventName: string): boolean;
}

/** Why one event was refused: a snake_case code and the field at fault. */
export interface Fault {
  code: string;
  path: string;
  reason: string;
}

/**
 * A UTF-16 code unit takes at most 3 bytes in UTF-8, so most lines need no byte count. `growth`
 * is what boxing added (in ASCII), so an event's limit is the same on the bus as in a file.
 */
function exceedsEventBytes(text: string, growth: number): boolean {
  return (
    (text.length - growth) * 3 > MAX_EVENT_BYTES &&
    Buffer.byteLength(text) - growth > MAX_EVENT_BYTES
  );
}

/**
 * Replaces the event's `properties.identifiers` with its box; returns how many bytes the line
 * grew by. Runs after the content checks, which read the identifiers.
 */
function boxIdentifiers(event: Envelope, boxing: BoxingKey): number {
  const { properties } = event;
  if (!Object.hasOwn(properties, 'identifiers')) return 0;
  const plain = JSON.stringify(properties.identifiers);
  if (plain === undefined) return 0;
  const boxed = box(boxing, event.tenant_id, plain);
  properties.identifiers = boxed;
  return boxed.length + 2 - Buffer.byteLength(plain);
}

function check(
  registry: EventCatalog,
  raw: unknown,
  scope: IntakeScope,
  receivedAt: string,
  collectorId: string,
): LandingLine | Fault {
  const schema = scope.source === 'browser' ? browserEnvelopeSchema : envelopeSchema;
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    const path = issue?.path.length ? issue.path.join('.') : 'event';
    return { code: 'invalid_event', path, reason: issue?.message ?? 'is invalid' };
  }
  return checkEnvelope(registry, parsed.data, scope, receivedAt, collectorId);
}

type LineText = typeof landingLineText;

/** Every check after the envelope's shape: its scope, the registry, its content and its size. */
function checkEnvelope(
  registry: EventCatalog,
  event: Envelope,
  scope: IntakeScope,
  receivedAt: string,
  collectorId: string,
  lineText: LineText = landingLineText,
): LandingLine | Fault {
  if (event.tenant_id !== scope.tenantId) {
    return {
      code: 'tenant_mismatch',
      path: 'tenant_id',
      reason: `${event.tenant_id} is not the tenant of this request`,
    };
  }
  if (scope.workspaceId !== null && event.workspace_id !== scope.workspaceId) {
    return {
      code: 'workspace_mismatch',
      path: 'workspace_id',
      reason: `${event.workspace_id} is not the workspace of this request`,
    };
  }
  if (!registry.hasWorkspace(event.tenant_id, event.workspace_id)) {
    return {
      code: 'unknown_workspace',
      path: 'workspace_id',
      reason: `workspace ${event.workspace_id} does not exist`,
    };
  }
  if (!registry.hasEventType(event.tenant_id, event.name)) {
    return {
      code: 'unknown_event_type',
      path: 'name',
      reason: `event type ${event.name} is not registered`,
    };
  }
  const contentFault = checkEventContent(event, scope.source);
  if (contentFault) return contentFault;
  // Only once the content is known to be shallow: JSON.stringify recurses on the call stack.
  const growth = scope.box ? boxIdentifiers(event, scope.box) : 0;
  const text = lineText(receivedAt, scope.source, collectorId, event, scope.intake);
  if (exceedsEventBytes(text, growth)) {
    return {
      code: 'event_too_large',
      path: 'event',
      reason: `is larger than ${MAX_EVENT_BYTES} bytes`,
    };
  }
  return {
    tenantId: event.tenant_id,
    workspaceId: event.workspace_id,
    receivedAt,
    eventId: event.id,
    text,
  };
}

/** Validates events against the envelope rules and the registry; keeps the good, lists the bad. */
export interface IntakeWithFaults {
  lines: LandingLine[];
  faults: (Fault & { index: number })[];
}

export function intake(
  registry: EventCatalog,
  raws: unknown[],
  scope: IntakeScope,
  receivedAt: string,
  collectorId: string,
): IntakeWithFaults {
  const lines: LandingLine[] = [];
  const faults: (Fault & { index: number })[] = [];
  raws.forEach((raw, index) => {
    const outcome = check(registry, raw, scope, receivedAt, collectorId);
    if ('text' in outcome) lines.push(outcome);
    else faults.push({ index, ...outcome });
  });
  return { lines, faults };
}

/**
 * `intake`'s check of one envelope the collector built itself (tracking-api/spec.ts), whose shape
 * holds by construction (a test checks that claim): every check but the envelope schema's, and
 * the line written by `builtLandingLineText`. Each would cost a sixth of the time such a batch
 * takes.
 */
export function checkBuilt(
  registry: EventCatalog,
  event: Envelope,
  scope: IntakeScope,
  receivedAt: string,
  collectorId: string,
): LandingLine | Fault {
  return checkEnvelope(registry, event, scope, receivedAt, collectorId, builtLandingLineText);
}

/** How a batch answer lists a refused event. */
export function asRejection(fault: Fault & { index: number }): Rejection {
  return { index: fault.index, code: fault.code, message: `${fault.path}: ${fault.reason}` };
}

/** A single event's fault as the error its endpoint answers. */
export function faultError(fault: Fault, source: EventSource): AppError {
  if (fault.code === 'event_too_large') return new PayloadTooLargeError(`event ${fault.reason}`);
  if (fault.code === 'tenant_mismatch' && source === 'server') {
    return new ForbiddenError('this collector token belongs to another tenant');
  }
  return ValidationError.field(fault.path, fault.reason);
}
