import type { Session } from '../store/session.js';
import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';

/** The moment a metric step runs at: `today` (UTC date) decides which window buckets count. */
export interface MetricTime {
  now: string;
  today: string;
}

export function metricTime(now: string): MetricTime {
  return { now, today: now.slice(0, 10) };
}

/**
 * The profiles whose values a metric step changed, where segment evaluation picks them up;
 * `endMetricStep` drops them with the step's work tables.
 */
export type TouchedProfiles = TemporaryTable<'metric_touched_profiles'>;

async function storeValues(session: Session, time: MetricTime): Promise<TouchedProfiles> {
  await session.run('metrics_store_values', { now: time.now });
  return temporaryTable(session, 'metric_touched_profiles');
}

async function recomputeTouched(session: Session, time: MetricTime): Promise<TouchedProfiles> {
  await session.run('metrics_resolve_touched');
  await session.run('metrics_take_touched_rows');
  await session.run('metrics_recompute_values', { today: time.today });
  return storeValues(session, time);
}

/** The tables of an ingest batch the metric step reads, once its events have their profiles. */
export interface BatchForMetrics {
  /** The batch's first-seen lines, and the profile each stored one went to. */
  accepted: TemporaryTable<'ingest_accepted'>;
  eventProfiles: TemporaryTable<'ingest_event_profiles'>;
  /** Every profile the batch created: each gets its row of values. */
  newProfiles: TemporaryTable<'ingest_new_profiles', 'complete'>;
  /** The batch's merges, or null when it merged nothing (there is nothing to follow). */
  merges: TemporaryTable<'ingest_merges'> | null;
}

/**
 * Adds what an ingest batch stored to the inputs and to the values of every backfilled definition,
 * a merged profile's values to its survivor's, all in the batch's transaction (design §12). The
 * values advance from the profiles' rows of values, so the step reads no stored input.
 */
export async function applyBatchToMetrics(
  batch: BatchForMetrics,
  time: MetricTime,
): Promise<TouchedProfiles> {
  const session = sessionOf(
    batch.accepted,
    batch.eventProfiles,
    batch.newProfiles,
    ...(batch.merges ? [batch.merges] : []),
  );
  await session.run('metrics_create_work_tables');
  await session.run('metrics_apply_backfilled');
  await session.run('metrics_sources_from_batch');
  await session.run('metrics_add_sources');
  if (batch.merges) await session.run('metrics_follow_merges');
  await session.run('metrics_take_touched_rows');
  await session.run('metrics_advance_values', { today: time.today });
  return storeValues(session, time);
}

/** Definitions created since the last pass, computed from the stored events. */
export async function hasPendingBackfill(session: Session): Promise<boolean> {
  const row = await session.one<{ pending: number }>('metrics_pending_definitions');
  return (row?.pending ?? 0) > 0;
}

export async function backfillDefinitions(
  session: Session,
  time: MetricTime,
): Promise<TouchedProfiles> {
  await session.run('metrics_create_work_tables');
  await session.run('metrics_apply_pending');
  await session.run('metrics_sources_from_events');
  await session.run('metrics_restart_applying');
  await session.run('metrics_add_sources');
  await session.run('metrics_mark_backfilled', { now: time.now });
  return recomputeTouched(session, time);
}

/** True when a day has begun since windowed values were last brought up to date. */
export async function needsDecay(session: Session, time: MetricTime): Promise<boolean> {
  const row = await session.one<{ decayed_through: string | null }>('metrics_decayed_through');
  return row?.decayed_through !== time.today;
}

/** Takes the buckets that left their window out of the values, so they decay without events. */
export async function decayWindows(session: Session, time: MetricTime): Promise<TouchedProfiles> {
  await session.run('metrics_create_work_tables');
  await session.run('metrics_touch_expired', { today: time.today });
  await session.run('metrics_zero_expired', { today: time.today });
  await session.run('metrics_mark_decayed', { today: time.today });
  return recomputeTouched(session, time);
}

export async function endMetricStep(touched: TouchedProfiles): Promise<void> {
  await sessionOf(touched).run('metrics_drop_work_tables');
}

/**
 * A deleted definition stops updating; what it contributed stays, a windowed sum as it stands
 * today (design §12), so the profiles' values do not change.
 */
export async function freezeDefinition(
  session: Session,
  key: { tenantId: string; workspaceScope: string; metricName: string; eventName: string },
  time: MetricTime,
): Promise<void> {
  const params = {
    tenant_id: key.tenantId,
    metric_name: key.metricName,
    contributor: `${key.eventName}|${key.workspaceScope}`,
  };
  await session.run('metrics_freeze_numbers', { ...params, today: time.today });
  await session.run('metrics_drop_contributor', params);
  await session.run('metrics_freeze_strings', params);
}
