import { type Context, nowIso } from '../context.js';
import {
  backfillDefinitions,
  decayWindows,
  endMetricStep,
  hasPendingBackfill,
  type MetricTime,
  metricTime,
  needsDecay,
} from '../metrics/materialize.js';
import { resumePurges } from '../privacy/erase.js';
import {
  type EvaluationOptions,
  evaluateAwaitingSegments,
  evaluateTouchedProfiles,
  hasAwaitingSegments,
} from '../segments/evaluate.js';
import type { Session } from '../store/session.js';

/** Changes go to the webhook outbox only where a webhook URL is configured. */
function evaluationOptions(context: Context, time: MetricTime): EvaluationOptions {
  return { now: time.now, announce: context.config.webhook_url !== undefined };
}

/** Segment membership follows every metric step, in the step's transaction. */
export async function evaluateAfterMetricStep(
  context: Context,
  session: Session,
  time: MetricTime,
): Promise<void> {
  await evaluateTouchedProfiles(session, evaluationOptions(context, time));
  await endMetricStep(session);
}

/**
 * The work the ingest loop does besides batches, each part in its own transaction: backfill new
 * metric definitions, let windowed values decay when a day begins, and evaluate segments created
 * or activated since the last pass. An erasure whose file rewrite failed is purged here too, once
 * its pause is over, so a running server does not wait for a restart to purge it.
 */
export async function runUpkeep(context: Context): Promise<void> {
  await resumePurges(context);
  const time = metricTime(nowIso(context));
  const due = await context.store.read(async (session) => ({
    backfill: await hasPendingBackfill(session),
    decay: await needsDecay(session, time),
    segments: await hasAwaitingSegments(session),
  }));
  if (due.backfill) {
    await context.store.write(async (session) => {
      await backfillDefinitions(session, time);
      await evaluateAfterMetricStep(context, session, time);
    });
  }
  if (due.decay) {
    await context.store.write(async (session) => {
      await decayWindows(session, time);
      await evaluateAfterMetricStep(context, session, time);
    });
  }
  if (due.segments) {
    await context.store.write((session) =>
      evaluateAwaitingSegments(session, evaluationOptions(context, time)),
    );
  }
}
