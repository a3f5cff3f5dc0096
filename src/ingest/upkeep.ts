import { type Context, nowIso } from '../context.js';
import { compactLastSeen } from '../identity/last-seen.js';
import { compactNextPart, inputsNeedCompaction } from '../metrics/compaction.js';
import {
  backfillDefinitions,
  decayWindows,
  endMetricStep,
  hasPendingBackfill,
  type MetricTime,
  metricTime,
  needsDecay,
  type TouchedProfiles,
} from '../metrics/materialize.js';
import { resumePurges } from '../privacy/erase.js';
import {
  type EvaluationOptions,
  evaluateAwaitingSegments,
  evaluateTouchedProfiles,
  hasAwaitingSegments,
} from '../segments/evaluate.js';
import { sessionOf } from '../store/temporary-table.js';
import { pruneRecentEvents } from './recent-events.js';

/** Changes go to the webhook outbox only where a webhook URL is configured. */
function evaluationOptions(context: Context, time: MetricTime): EvaluationOptions {
  return { now: time.now, announce: context.config.webhook_url !== undefined };
}

/**
 * Segment membership follows every metric step, in the step's transaction: it reads the profiles
 * the step touched, so it runs after the step, and ends it.
 */
export async function evaluateAfterMetricStep(
  context: Context,
  touched: TouchedProfiles,
  time: MetricTime,
): Promise<void> {
  await evaluateTouchedProfiles(sessionOf(touched), evaluationOptions(context, time));
  await endMetricStep(touched);
}

/**
 * The work the ingest loop does besides batches, each part in its own transaction: backfill new
 * metric definitions, let windowed values decay when a day begins, and evaluate segments created
 * or activated since the last pass, keep the live view's lines to their window, and fold the
 * appended last-seen rows into profiles and compact the appended metric inputs when they are
 * many. An erasure whose file rewrite failed is purged here too, once its pause is over, so a
 * running server does not wait for a restart to purge it. The purges, the live view's window, the
 * last-seen fold and the compaction are the `maintenance`, which a loop does not need before
 * every batch (LoopHealth.upkeep).
 */
export async function runUpkeep(
  context: Context,
  { maintenance }: { maintenance: boolean } = { maintenance: true },
): Promise<void> {
  if (maintenance) {
    await resumePurges(context);
    await pruneRecentEvents(context);
    await compactLastSeen(context);
  }
  const time = metricTime(nowIso(context));
  const due = await context.store.read(async (session) => ({
    backfill: await hasPendingBackfill(session),
    decay: await needsDecay(session, time),
    compaction: maintenance && (await inputsNeedCompaction(session)),
  }));
  // One part a pass, so that batches come between the parts.
  if (due.compaction) await compactNextPart(context.store);
  if (due.backfill) {
    await context.store.write(async (session) => {
      const touched = await backfillDefinitions(session, time);
      await evaluateAfterMetricStep(context, touched, time);
    });
  }
  if (due.decay) {
    await context.store.write(async (session) => {
      const touched = await decayWindows(session, time);
      await evaluateAfterMetricStep(context, touched, time);
    });
  }
  // Read after the backfill: a segment waits for the metrics of its behaviours to be complete.
  if (await context.store.read(hasAwaitingSegments)) {
    await context.store.write((session) =>
      evaluateAwaitingSegments(session, evaluationOptions(context, time)),
    );
  }
}
