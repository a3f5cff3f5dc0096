import type { Context } from '../context.js';

/**
 * Ingest appends each touched profile's last seen (migration 019); the appended rows are folded
 * into `profiles` once they number this many and at least `PENDING_SHARE` of the profiles: each
 * fold reads the profiles table whole once, as every batch did before, so it is paid once for
 * many batches (docs/decisions.md, "Last seen, appended").
 */
const MIN_PENDING = 50_000;
const PENDING_SHARE = 1 / 8;

/** Folds the appended last-seen rows into profiles when enough are pending; between batches. */
export async function compactLastSeen(context: Context): Promise<void> {
  const counts = await context.store.read((session) =>
    session.one<{ pending: number; profiles: number }>('last_seen_pending'),
  );
  const pending = Number(counts?.pending ?? 0);
  if (pending < Math.max(MIN_PENDING, Number(counts?.profiles ?? 0) * PENDING_SHARE)) return;
  await foldLastSeen(context);
}

/** Folds every appended last-seen row into profiles, however few. */
export async function foldLastSeen(context: Context): Promise<void> {
  await context.store.write((session) => session.run('last_seen_compact'));
}
