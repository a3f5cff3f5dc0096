/**
 * What a landing file is (design §2), shared by the collector that writes them, ingest that
 * reads them, and the backup that copies them: a file a collector still appends to ends in
 * `OPEN_SUFFIX`, one it sealed in `SEALED_SUFFIX`; each line records the event's source, and the
 * API it came through when that is not cds's own (`intake`).
 */
export const OPEN_SUFFIX = '.ndjson.open';
export const SEALED_SUFFIX = '.ndjson';

export type EventSource = 'browser' | 'server';

/**
 * The API other than cds's own `/v1/events` routes that a line came through, recorded as the
 * line's `intake` (absent on lines of cds's own routes, and on every line written before it
 * existed). Only the live view reads it: `source` alone decides the rules an event meets, so a
 * Segment tracking API event stays a server event.
 */
export type Intake = 'segment_api';
