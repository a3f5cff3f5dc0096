import type { Session } from './session.js';

/**
 * What analysts get (design §3): profiles, their metric values, segment definitions, members and
 * history, and stored events (identifier keys only, never values). Tokens, identifier ciphertext
 * and the ingest bookkeeping stay behind. Each is read through its view `analyst_<table>`
 * (sql/snapshot.sql), so a snapshot and an export hold the same columns of the same types.
 */
export const ANALYST_TABLES = [
  'profiles',
  'profile_metrics',
  'segments',
  'segment_members',
  'segment_history',
  'events',
] as const;

export type AnalystTable = (typeof ANALYST_TABLES)[number];

export type AnalystRowCounts = Record<AnalystTable, number>;

/** The view `table` is read through while `withAnalystViews` runs. */
export const analystView = (table: AnalystTable): string => `analyst_${table}`;

/**
 * Runs `work` with the analysts' views on `session`. They are temporary views of this connection
 * and dropped afterwards, so the live database's schema never holds them.
 */
export async function withAnalystViews<T>(session: Session, work: () => Promise<T>): Promise<T> {
  await session.run('analyst_views_create');
  try {
    return await work();
  } finally {
    await session.run('analyst_views_drop');
  }
}
