import { z } from 'zod';
import { eventNameSchema, idSchema } from '../ids.js';
import type { EventSource, Intake } from '../landing-format.js';

/** 32 KiB an event (design §8), measured on the stored line. */
export const MAX_EVENT_BYTES = 32 * 1024;
/** 1,000 events a batch request. */
export const MAX_BATCH_EVENTS = 1000;

/** The inbound envelope (interface "Event"); `anon_id` is required on browser events. */
export const envelopeSchema = z.object({
  envelop_version: z.literal('1.0', { error: 'must be "1.0"' }),
  id: z.string().min(1).max(128),
  name: eventNameSchema,
  tenant_id: idSchema,
  workspace_id: idSchema,
  anon_id: z
    .string()
    .regex(/^cookie:.+$/, 'must be of the form cookie:<visitor_id>')
    .max(256)
    .optional(),
  occured_at: z.iso.datetime({ offset: true, error: 'must be an ISO 8601 timestamp' }),
  properties: z.record(z.string(), z.unknown()).default({}),
});

export type Envelope = z.infer<typeof envelopeSchema>;

export const browserEnvelopeSchema = envelopeSchema.extend({
  anon_id: envelopeSchema.shape.anon_id.unwrap(),
});

/** A line's `intake` field, absent for cds's own routes so their lines stay as they were. */
function intakeField(intake: Intake | undefined): string {
  return intake === undefined ? '' : `,"intake":"${intake}"`;
}

/**
 * One landing-file line (design §2), built by hand around the already validated envelope; a line
 * of another vendor's API names it in `intake`.
 */
export function landingLineText(
  receivedAt: string,
  source: EventSource,
  collectorId: string,
  event: Envelope,
  intake?: Intake,
): string {
  return `{"received_at":"${receivedAt}","source":"${source}"${intakeField(intake)},"collector_id":"${collectorId}","event":${JSON.stringify(event)}}\n`;
}

/**
 * `landingLineText` for an envelope the collector built itself (tracking-api/spec.ts), in half the
 * time: every field but `anon_id` and `properties` is text it made or checked (a UUID, an event
 * name, registry ids, its own timestamp), which JSON needs no escaping for. A test holds it to
 * the same text as `landingLineText`.
 */
export function builtLandingLineText(
  receivedAt: string,
  source: EventSource,
  collectorId: string,
  event: Envelope,
  intake?: Intake,
): string {
  const anonId = event.anon_id === undefined ? '' : `,"anon_id":${JSON.stringify(event.anon_id)}`;
  return `{"received_at":"${receivedAt}","source":"${source}"${intakeField(intake)},"collector_id":"${collectorId}","event":{"envelop_version":"${event.envelop_version}","id":"${event.id}","name":"${event.name}","tenant_id":"${event.tenant_id}","workspace_id":"${event.workspace_id}"${anonId},"occured_at":"${event.occured_at}","properties":${JSON.stringify(event.properties)}}}\n`;
}
