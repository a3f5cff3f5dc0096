import type { QuarantinedFile } from '../quarantine/quarantine.js';
import type { LineSource, Staged } from './line-source.js';

/**
 * Where the landing lines of an ingest come from, as the engine (batch.ts, isolate.ts,
 * loop-health.ts) asks it: everything else (the pipeline's steps, the transaction, the stats, the
 * live feed, the bisect of a failing batch, the quarantine's records) is the engine's, written
 * once. A `Unit` is the least a source hands over: a landing file, or one message of the events
 * stream. Two sources: landing files (landing-source.ts) and the events stream
 * (shards/stream-source.ts).
 */
export interface IngestSource<Unit> {
  /**
   * Before the batch's transaction: the units' lines made ready to stage, or null when none is
   * left to ingest (landing files a crash left recorded as done).
   */
  prepare(units: readonly Unit[]): Promise<PreparedBatch | null>;
  /**
   * Units that no batch can take, set aside before the first one with why (the events stream:
   * an identifier box no bus key opens), and the others, as the batches take them. Quarantined
   * after every other unit has committed, since quarantining may record a unit as done.
   */
  screen?(units: readonly Unit[]): Screened<Unit>;
  /**
   * The part a unit belongs to when a failing batch is split: first by this, then in halves. Each
   * part must keep the source's order of what it records as done (the stream's sequence is kept
   * per tenant, so its parts are tenants; landing files are recorded one by one, so theirs are
   * the partitions `tenant=<t>/workspace=<w>`).
   */
  partitionOf(unit: Unit): string;
  /** One failing unit cut in two, in order; none when it holds one line: it is quarantined. */
  halve(unit: Unit): Promise<Unit[]>;
  /**
   * Sets aside a unit that fails every batch (quarantine/quarantine.ts), so that the source never
   * offers it again. The engine then scrubs it of erased identifiers and shows it in the live view.
   */
  quarantine(unit: Unit, failure: Error, now: string): Promise<QuarantinedFile>;
}

export interface Screened<Unit> {
  admitted: Unit[];
  refused: { unit: Unit; failure: Error }[];
}

/** One batch of a source, ready for its transaction. */
export interface PreparedBatch {
  /** The lines, as the pipeline's first step stages them. */
  readonly lines: LineSource;
  /** The landing files the batch takes, for the stats (0 for the events stream). */
  readonly files: number;
  /**
   * In the batch's transaction, after the pipeline's steps and before the staged lines are
   * dropped: what marks the batch's units done (landing files recorded, the stream's sequences
   * stored), so that a crash after the commit skips them and one before it reads them again.
   */
  recordDone(staged: Staged, now: string): Promise<void>;
  /** Once the transaction has ended, committed or not (landing files are deleted once committed). */
  finish(committed: boolean): Promise<void>;
}
