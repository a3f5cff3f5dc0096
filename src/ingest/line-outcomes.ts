import { sessionOf } from '../store/temporary-table.js';
import type { ResolvedBatch } from './identities.js';
import { originsParam, type Staged } from './line-source.js';
import type { EventProfiles } from './store-events.js';

/**
 * Records every line the batch rejected, with its reason and origin: the lines the checks
 * refused, and the first-seen lines left without identifiers. Needs first seen decided and the
 * keys final, so it runs after the identity step.
 */
export async function recordRejections(
  staged: Staged,
  resolved: Pick<ResolvedBatch, 'accepted' | 'eventKeys'>,
  now: string,
): Promise<void> {
  const session = sessionOf(staged, resolved.accepted, resolved.eventKeys);
  await session.run('ingest_record_rejections', { paths: originsParam(staged), now });
}

/** What became of a batch's lines, counted in SQL. */
export interface LineCounts {
  lines: number;
  valid: number;
  first_seen: number;
  /** First-seen lines dropped because they were in flight for an erased profile. */
  erased: number;
  stored: number;
  new_profiles: number;
  rejected: number;
  unparsable: number;
  last_received_at: string | null;
}

/** Counts the batch's lines by outcome; reads every table that decides one, so it runs last. */
export async function countLines(
  staged: Staged,
  resolved: Pick<ResolvedBatch, 'accepted' | 'erased' | 'newProfiles'>,
  eventProfiles: EventProfiles,
): Promise<LineCounts> {
  const session = sessionOf(
    staged,
    resolved.accepted,
    resolved.erased,
    resolved.newProfiles,
    eventProfiles,
  );
  return (await session.one<LineCounts>('ingest_batch_counts')) as LineCounts;
}
