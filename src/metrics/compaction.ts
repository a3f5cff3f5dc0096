import type { Store } from '../store/database.js';
import type { Session } from '../store/session.js';

/**
 * Events read into inputs since the last compaction, beyond which the ingest loop's upkeep compacts
 * them: a compaction reads both input tables whole (once a part), so it is paid once for as many
 * rows as it leaves.
 */
const MIN_PENDING_INPUTS = 100_000;

/**
 * Inputs a compaction takes at once: bounds the memory it holds and how long batches wait for it
 * whatever the store's size.
 */
const ROWS_A_PART = 1_500_000;

interface CompactionState {
  compacted_rows: number;
  appended_since: number;
  parts: number;
  next_part: number;
  contributions_end: number;
  strings_end: number;
}

const stateOf = (session: Session) => session.one<CompactionState>('metrics_inputs_rows');

/**
 * True when a compaction is under way, or batches appended about as many inputs as the last one
 * left (and enough to matter).
 */
export async function inputsNeedCompaction(session: Session): Promise<boolean> {
  const state = await stateOf(session);
  if (Number(state?.parts ?? 0) > 0) return true;
  const compacted = Number(state?.compacted_rows ?? 0);
  return Number(state?.appended_since ?? 0) >= Math.max(MIN_PENDING_INPUTS, compacted);
}

/** The rowids `[from, to)` of part `part` of a table whose rows ended at `end`. */
const run = (end: number, part: number, parts: number) => ({
  from: Math.floor((end * part) / parts),
  to: Math.floor((end * (part + 1)) / parts),
});

/**
 * Folds the next run of the inputs into one row a day and contributor, each under its survivor, in
 * one transaction, starting a compaction if none is under way; true once the compaction is over.
 * Values do not change, so batches may come between two parts.
 */
export async function compactNextPart(store: Store, rowsAPart = ROWS_A_PART): Promise<boolean> {
  return store.write(async (session) => {
    let state = await stateOf(session);
    if (Number(state?.parts ?? 0) === 0) {
      const rows = await session.one<{ input_rows: number }>('metrics_compaction_rows');
      const parts = Math.max(1, Math.ceil(Number(rows?.input_rows ?? 0) / rowsAPart));
      await session.run('metrics_compaction_start', { parts });
      state = await stateOf(session);
    }
    const parts = Number(state?.parts ?? 1);
    const part = Number(state?.next_part ?? 0);
    await session.run(
      'metrics_compaction_take_contributions',
      run(Number(state?.contributions_end ?? 0), part, parts),
    );
    await session.run('metrics_compaction_put_contributions');
    await session.run(
      'metrics_compaction_take_strings',
      run(Number(state?.strings_end ?? 0), part, parts),
    );
    await session.run('metrics_compaction_put_strings');
    if (part + 1 < parts) {
      await session.run('metrics_compaction_next_part');
      return false;
    }
    await session.run('metrics_compaction_done');
    return true;
  });
}
