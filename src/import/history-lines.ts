import { z } from 'zod';
import {
  checkBuilt,
  type EventCatalog,
  type Fault,
  type IntakeScope,
  intake,
} from '../collector/accept.js';
import type { LandingLine } from '../collector/landing-writer.js';
import { TrackingMapper } from '../collector/tracking-api/spec.js';

/**
 * How a file of history is written: `envelope`, landing lines as a collector writes them (or
 * bare envelopes), or `segment`, Segment's tracking API calls, one JSON object a line.
 */
export const HISTORY_FORMATS = ['envelope', 'segment'] as const;
export type HistoryFormat = (typeof HISTORY_FORMATS)[number];

/** Where an import's lines may go: named by `--tenant` and `--workspace`, or by each line. */
export interface ImportTarget {
  tenantId: string | null;
  workspaceId: string | null;
}

/** The collector id of the lines an import writes for bare envelopes and Segment calls. */
export const IMPORT_COLLECTOR_ID = 'import';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** What a line's first keys tell of its format, or null when they tell nothing. */
export function formatOfLine(text: string): HistoryFormat | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (!isObject(value)) return null;
  if (isObject(value.event) || typeof value.envelop_version === 'string') return 'envelope';
  if (typeof value.type === 'string') return 'segment';
  return null;
}

/**
 * A landing line's own fields around its event (design §2); `intake` only as collectors write it.
 * `cds generate-events` writes `source` and `event` alone: the others are then the import's.
 */
const landingLineSchema = z.object({
  received_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' }).optional(),
  source: z.enum(['browser', 'server'], { error: 'must be browser or server' }),
  intake: z.literal('segment_api', { error: 'must be segment_api' }).optional(),
  collector_id: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1 to 64 letters, digits, _ . or -')
    .default(IMPORT_COLLECTOR_ID),
  event: z.unknown(),
});

const UNPARSABLE: Fault = {
  code: 'unparsable_line',
  path: 'line',
  reason: 'is not one JSON object',
};

/** An ISO 8601 text as JavaScript writes it (`…T10:00:00.000Z`), as collectors stamp lines. */
const isoText = (ms: number) => new Date(ms).toISOString();

/**
 * Turns the lines of one file of history into landing lines, each through the checks a
 * collector makes (src/collector/accept.ts): the envelope's shape, its tenant and workspace
 * against the import's target and the registry, its event type, its content and its size. A
 * line that fails is a `Fault`, as the collector's answer names it, and the rest go on.
 *
 * A line's `received_at` is when the history says cds (or Segment) received it, else when the
 * event happened: never the time of the import, so an erasure's tombstone drops history of an
 * erased customer from before the erasure as it drops lines that were in flight (design §15).
 */
export class HistoryLines {
  private readonly mapper: TrackingMapper | null;
  private readonly segmentScope: IntakeScope | null;

  constructor(
    private readonly format: HistoryFormat,
    private readonly target: ImportTarget,
    private readonly catalog: EventCatalog,
    /** The input's digest, for the ids of Segment messages that carry no messageId. */
    private readonly inputDigest: string,
    /** The import's start, in ms: the latest time a line may say it was received. */
    private readonly nowMs: number,
  ) {
    const { tenantId, workspaceId } = target;
    if (format === 'segment') {
      if (tenantId === null || workspaceId === null) {
        throw new Error('a Segment export is imported into one named tenant and workspace');
      }
      this.mapper = new TrackingMapper({ tenantId, workspaceId, receivedAtMs: nowMs });
      this.segmentScope = { source: 'server', intake: 'segment_api', tenantId, workspaceId };
    } else {
      this.mapper = null;
      this.segmentScope = null;
    }
  }

  /** The landing line `text` (line `number` of the input) becomes, or why it cannot be one. */
  convert(text: string, number: number): LandingLine | Fault {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return UNPARSABLE;
    }
    if (!isObject(value)) return UNPARSABLE;
    return this.format === 'segment' ? this.fromSegment(value, number) : this.fromEnvelope(value);
  }

  private fromEnvelope(value: Record<string, unknown>): LandingLine | Fault {
    if (typeof value.envelop_version === 'string' || !Object.hasOwn(value, 'event')) {
      return this.checked(
        value,
        'server',
        undefined,
        this.receivedAtOf(value.occured_at),
        IMPORT_COLLECTOR_ID,
      );
    }
    const line = landingLineSchema.safeParse(value);
    if (!line.success) {
      const [issue] = line.error.issues;
      return {
        code: 'unparsable_line',
        path: issue?.path.join('.') || 'line',
        reason: issue?.message ?? 'is not a landing line',
      };
    }
    const { received_at, source, intake: api, collector_id, event } = line.data;
    const receivedAt =
      received_at === undefined
        ? this.receivedAtOf(isObject(event) ? event.occured_at : undefined)
        : isoText(Date.parse(received_at));
    return this.checked(event, source, api, receivedAt, collector_id);
  }

  private checked(
    event: unknown,
    source: IntakeScope['source'],
    api: IntakeScope['intake'],
    receivedAt: string,
    collectorId: string,
  ): LandingLine | Fault {
    const named = isObject(event) && typeof event.tenant_id === 'string' ? event.tenant_id : '';
    const scope: IntakeScope = {
      source,
      ...(api === undefined ? {} : { intake: api }),
      tenantId: this.target.tenantId ?? named,
      workspaceId: this.target.workspaceId,
    };
    const { lines, faults } = intake(this.catalog, [event], scope, receivedAt, collectorId);
    return lines[0] ?? (faults[0] as Fault);
  }

  /**
   * A Segment call through the collector's mapping (tracking-api/spec.ts), with three changes
   * history needs: `timestamp` is taken as it is (an export's is already corrected for the
   * device's clock, so `sentAt` is dropped rather than applied again); without one, Segment's
   * `receivedAt` is the time; and a message without a `messageId` gets one from the input's
   * digest and its line number, so importing the file again stores it once.
   */
  private fromSegment(message: Record<string, unknown>, number: number): LandingLine | Fault {
    const mapper = this.mapper as TrackingMapper;
    const received =
      typeof message.receivedAt === 'string' ? Date.parse(message.receivedAt) : Number.NaN;
    message.sentAt = undefined;
    if (
      message.timestamp == null &&
      message.originalTimestamp == null &&
      Number.isFinite(received)
    ) {
      message.timestamp = isoText(received);
    }
    if (typeof message.messageId !== 'string' || message.messageId === '') {
      message.messageId = `import-${this.inputDigest}-${number}`;
    }
    const envelope = mapper.toEnvelope(message, null);
    if ('code' in envelope) return envelope;
    const receivedAt = Number.isFinite(received)
      ? isoText(Math.min(received, this.nowMs))
      : this.receivedAtOf(envelope.occured_at);
    return checkBuilt(
      this.catalog,
      envelope,
      this.segmentScope as IntakeScope,
      receivedAt,
      IMPORT_COLLECTOR_ID,
    );
  }

  /** The event's time as its receipt time, when the history has none; now at the latest. */
  private receivedAtOf(occuredAt: unknown): string {
    const at = typeof occuredAt === 'string' ? Date.parse(occuredAt) : Number.NaN;
    return isoText(Number.isFinite(at) ? Math.min(at, this.nowMs) : this.nowMs);
  }
}
