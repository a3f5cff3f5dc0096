import { systemClock } from '../clock.js';
import type { Context } from '../context.js';
import { listQuarantine } from '../quarantine/quarantine.js';
import { listSealedFiles } from './landing-files.js';

/** The sealed landing files not yet ingested. */
export interface Backlog {
  backlog_files: number;
  backlog_bytes: number;
  /** Age of the oldest sealed file not yet ingested, in seconds; 0 with no backlog. */
  lag_seconds: number;
}

export interface IngestStatus extends Backlog {
  batches: number;
  files: number;
  events_ingested: number;
  duplicates: number;
  rejected: number;
  unparsable_lines: number;
  dropped_identifiers: number;
  last_batch_at: string | null;
  last_received_at: string | null;
  /** Landing files set aside because every batch holding them failed, and their lines. */
  quarantined_files: number;
  quarantined_lines: number;
}

type Counters = Omit<IngestStatus, keyof Backlog | 'quarantined_files' | 'quarantined_lines'>;

/** Reads the landing folder only, so an unauthenticated probe costs no database query. */
export async function landingBacklog(context: Context): Promise<Backlog> {
  const backlog = await listSealedFiles(context.dataDir.landingDir);
  const oldest = Math.min(...backlog.map((file) => file.modifiedAt));
  // Against the files' modification times, which are the system clock's.
  return {
    backlog_files: backlog.length,
    backlog_bytes: backlog.reduce((sum, file) => sum + file.bytes, 0),
    lag_seconds:
      backlog.length === 0 ? 0 : Math.max(0, (systemClock.now().getTime() - oldest) / 1000),
  };
}

/** The counters of `GET /readyz` (operator) and `cds ingest --status`. */
export async function ingestStatus(context: Context): Promise<IngestStatus> {
  const counters = await context.store.read((session) => session.one<Counters>('ingest_stats'));
  const quarantined = await listQuarantine(context.dataDir);
  return {
    ...(counters as Counters),
    ...(await landingBacklog(context)),
    quarantined_files: quarantined.length,
    quarantined_lines: quarantined.reduce((sum, file) => sum + file.lines, 0),
  };
}
