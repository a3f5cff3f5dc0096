import type { Context } from '../context.js';
import { applyBatchToMetrics, metricTime } from '../metrics/materialize.js';
import type { Session } from '../store/session.js';
import { type DedupAdditions, dedupAdditions, dedupIndexOf } from './dedup-index.js';
import { markDuplicates } from './duplicates.js';
import { type IdentityAdditions, identifierIndexOf } from './identifier-index.js';
import { resolveAndApply } from './identities.js';
import { countLines, type LineCounts, recordRejections } from './line-outcomes.js';
import { type LineSource, type Staged, stageLines } from './line-source.js';
import type { WorkspaceAdvance } from './live-feed.js';
import { recordRecentEvents } from './recent-events.js';
import { assignProfiles, insertEvents, recordConsent, touchProfiles } from './store-events.js';
import { evaluateAfterMetricStep } from './upkeep.js';

/** What became of a batch's lines, and what the identity step counted. */
export interface IngestedLines {
  /** The staged lines, still there for the source's own records until the batch drops them. */
  staged: Staged;
  counts: LineCounts;
  droppedIdentifiers: number;
  merges: number;
  /** What the live view gained per workspace: told to its streams once the batch commits. */
  advances: WorkspaceAdvance[];
  /** The stored events' dedup keys: added to the store's dedup index once the batch commits. */
  dedupAdditions: DedupAdditions;
  /** The stored profiles, identifiers and merges: applied to the identifier index once committed. */
  identityAdditions: IdentityAdditions;
}

/**
 * The steps of one micro-batch (design §9–§13), from whatever source its lines come, in the
 * caller's transaction: each step takes the tables it reads and returns those it made, so this
 * list is the order. The caller records what the source needs (landing files, say), updates the
 * stats and drops the batch's temporary tables (`ingest_drop_temporaries`).
 */
export async function ingestLines(
  context: Context,
  session: Session,
  source: LineSource,
  now: string,
): Promise<IngestedLines> {
  const staged = await stageLines(session, source);
  const candidates = await markDuplicates(staged, dedupIndexOf(context.store));
  const resolved = await resolveAndApply(
    staged,
    candidates,
    context.keyRing,
    identifierIndexOf(context.store),
    now,
  );
  const eventProfiles = await assignProfiles(staged, resolved);
  // The stored tables resolving scanned stay cached beside the batch's temporary tables through
  // storing its events, the peak of a batch: evicted first.
  await context.store.releaseTableCache();
  await insertEvents(resolved, eventProfiles, now);
  await touchProfiles(resolved, eventProfiles);
  await recordConsent(resolved, eventProfiles, {
    now,
    announce: context.config.webhook_url !== undefined,
  });
  const time = metricTime(now);
  const touched = await applyBatchToMetrics(
    { ...resolved, eventProfiles, merges: resolved.mergeCount > 0 ? resolved.merges : null },
    time,
  );
  await evaluateAfterMetricStep(context, touched, time);
  await recordRejections(staged, resolved, now);
  const advances = await recordRecentEvents(
    staged,
    resolved,
    eventProfiles,
    candidates.storedKeys,
    now,
  );
  const counts = await countLines(staged, resolved, eventProfiles);
  return {
    staged,
    counts,
    droppedIdentifiers: resolved.dropped,
    merges: resolved.mergeCount,
    advances,
    dedupAdditions: dedupAdditions(candidates.dedupKeys, now, counts.stored),
    identityAdditions: resolved.additions,
  };
}
