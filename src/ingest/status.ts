import type { Context } from '../context.js';
import { listSealedFiles } from './landing-files.js';
import { listQuarantine } from './quarantine.js';

export interface IngestStatus {
  batches: number;
  files: number;
  events_ingested: number;
  duplicates: number;
  rejected: number;
  unparsable_lines: number;
  dropped_identifiers: number;
  last_batch_at: string | null;
  last_received_at: string | null;
  backlog_files: number;
  backlog_bytes: number;
  /** Age of the oldest sealed file not yet ingested, in seconds; 0 with no backlog. */
  lag_seconds: number;
  /** Landing files set aside because every batch holding them failed, and their lines. */
  quarantined_files: number;
  quarantined_lines: number;
}

type Counters = Omit<
  IngestStatus,
  'backlog_files' | 'backlog_bytes' | 'lag_seconds' | 'quarantined_files' | 'quarantined_lines'
>;

/** The counters of `GET /readyz` and `cds ingest --status`. */
export async function ingestStatus(context: Context): Promise<IngestStatus> {
  const counters = await context.store.read((session) => session.one<Counters>('ingest_stats'));
  const backlog = await listSealedFiles(context.dataDir.landingDir);
  const quarantined = await listQuarantine(context.dataDir);
  const oldest = Math.min(...backlog.map((file) => file.modifiedAt));
  return {
    ...(counters as Counters),
    backlog_files: backlog.length,
    backlog_bytes: backlog.reduce((sum, file) => sum + file.bytes, 0),
    lag_seconds: backlog.length === 0 ? 0 : Math.max(0, (Date.now() - oldest) / 1000),
    quarantined_files: quarantined.length,
    quarantined_lines: quarantined.reduce((sum, file) => sum + file.lines, 0),
  };
}
