/**
 * What a landing file is (design §2), shared by the collector that writes them, ingest that
 * reads them, and the backup that copies them: a file a collector still appends to ends in
 * `OPEN_SUFFIX`, one it sealed in `SEALED_SUFFIX`; each line records the event's source.
 */
export const OPEN_SUFFIX = '.ndjson.open';
export const SEALED_SUFFIX = '.ndjson';

export type EventSource = 'browser' | 'server';
