import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import type { ResolvedBatch } from './identities.js';
import type { Staged } from './line-source.js';

/** The profile each stored line goes to: what every step after resolution reads. */
export type EventProfiles = TemporaryTable<'ingest_event_profiles'>;

/**
 * Gives each line its set's profile, or the profile it was resolved to alone. Needs the resolution
 * complete (the settled sets come last, after every merge), so it runs after the identity step.
 */
export async function assignProfiles(
  staged: Staged,
  resolved: Pick<ResolvedBatch, 'eventSets' | 'resolution' | 'repeatResolution'>,
): Promise<EventProfiles> {
  const session = sessionOf(
    staged,
    resolved.eventSets,
    resolved.resolution,
    resolved.repeatResolution,
  );
  await session.run('ingest_assign_profiles');
  return temporaryTable(session, 'ingest_event_profiles');
}

/**
 * Stores the first-seen lines as events of their profiles, their identifiers replaced by keys.
 * Runs after the identity step wrote the profiles and merges, so no stored event names a profile
 * that was merged away in this batch.
 */
export async function insertEvents(
  resolved: Pick<ResolvedBatch, 'accepted' | 'eventKeys' | 'keyLists'>,
  eventProfiles: EventProfiles,
  now: string,
): Promise<void> {
  const session = sessionOf(
    resolved.accepted,
    resolved.eventKeys,
    resolved.keyLists,
    eventProfiles,
  );
  await session.run('ingest_insert_events', { now });
}

/**
 * Adds the consent choices of the batch's events to their profiles' ledgers; where webhooks are
 * sent (`announce`), a revocation is announced first, as it is told by the ledger before it.
 */
export async function recordConsent(
  resolved: Pick<ResolvedBatch, 'accepted'>,
  eventProfiles: EventProfiles,
  options: { now: string; announce: boolean },
): Promise<void> {
  const session = sessionOf(resolved.accepted, eventProfiles);
  // Both statements read ledgers; a batch that carries no choice must not pay for them.
  const choices = await session.one<{ present: boolean }>('ingest_consent_choices_present');
  if (!choices?.present) return;
  if (options.announce) await session.run('ingest_queue_revocations', { now: options.now });
  await session.run('ingest_record_consent');
}

/** Moves each profile's `last_seen_at` to its newest event in the batch, once events have profiles. */
export async function touchProfiles(
  resolved: Pick<ResolvedBatch, 'accepted'>,
  eventProfiles: EventProfiles,
): Promise<void> {
  await sessionOf(resolved.accepted, eventProfiles).run('ingest_touch_profiles');
}
