import { cpSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { openDataDir } from '../src/store/data-dir.js';
import { type GeneratorRun, writeLandingFiles } from './ingest.js';
import { type LiveBatch, liveBatches } from './live-batches.js';
import { BENCH_METRICS, prepareDataDir, rate, type Timed, timeCds } from './setup.js';

/** The events of a live micro-batch: what a store sees batch after batch from its traffic. */
const SMALL_BATCH_EVENTS = 1_000;
/** Small batches are cheap and noisy: each is ingested this many times, the median kept. */
const SMALL_BATCH_REPEATS = 3;
/** Small batches given to a running `cds ingest --watch`, after one that warms it up. */
const LIVE_BATCHES = 5;
/** The generator steps 1–5 s an event, so a round's events cover about this much time each. */
const MEAN_STEP_MS = 3_000;
const FIRST_EVENT = Date.parse('2026-01-01T00:00:00Z');

/**
 * Round `round` (from 1) of the growth bench: a stream of its own seed, so its event and order ids
 * and cookies are new, while its customers' emails and phones (the generator's visitor numbers)
 * are those of every other round, so returning customers merge with what is stored.
 */
function roundRun(round: number, events: number): GeneratorRun {
  return {
    seed: 1_000 + round,
    start: new Date(FIRST_EVENT + (round - 1) * events * MEAN_STEP_MS),
    collector: `growth-r${String(round).padStart(3, '0')}`,
  };
}

interface IngestRun {
  timed: Timed;
  stored: number;
  batches: number;
  /** Each traced CHECKPOINT, in ms. */
  checkpoints: number[];
  /** Each traced ingest batch, in ms. */
  batchMs: number[];
}

function traces(stderr: string, step: string): number[] {
  const pattern = new RegExp(`^trace ${step} (\\d+) ms$`, 'gm');
  return [...stderr.matchAll(pattern)].map((match) => Number(match[1]));
}

/** `cds ingest` of a data dir's sealed files, traced (`CDS_TRACE=1`), as a child process. */
async function ingestTraced(dir: string): Promise<IngestRun> {
  const timed = await timeCds(['--data-dir', dir, '--json', 'ingest'], { CDS_TRACE: '1' });
  const totals = JSON.parse(timed.stdout) as { events: number; batches: number };
  return {
    timed,
    stored: totals.events,
    batches: totals.batches,
    checkpoints: traces(timed.stderr, 'checkpoint'),
    batchMs: traces(timed.stderr, 'ingest batch'),
  };
}

function mean(values: number[]): number {
  return values.length === 0
    ? Number.NaN
    : values.reduce((sum, value) => sum + value, 0) / values.length;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function ordinal(n: number): string {
  const tens = n % 100;
  if (tens >= 11 && tens <= 13) return `${n}th`;
  return `${n}${['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;
}

/** 9,951,234 as "10M", 150,000 as "150k": the store's size in the ratio lines' words. */
function shortCount(count: number): string {
  if (count >= 1_000_000) return `${Math.round(count / 100_000) / 10}M`;
  if (count >= 1_000) return `${Math.round(count / 1_000)}k`;
  return String(count);
}

function describeCheckpoints(checkpoints: number[]): string {
  if (checkpoints.length === 0) return 'no checkpoint traced';
  return `checkpoint ${mean(checkpoints).toFixed(0)} ms a batch (max ${Math.max(...checkpoints)}, ${checkpoints.length} traced)`;
}

/** The same small batch (seed `repeat`), ingested into the data dir given: CPU and traced batch. */
async function smallBatch(dir: string, repeat: number, after: number): Promise<IngestRun> {
  writeLandingFiles(join(dir, 'landing'), SMALL_BATCH_EVENTS, {
    seed: 900 + repeat,
    start: new Date(FIRST_EVENT + after),
    collector: `growth-small-${repeat}`,
  });
  return ingestTraced(dir);
}

/**
 * `npm run bench -- growth [--rounds N] [--events M]` (issue 37): N rounds of M new events
 * ingested by `cds ingest` into one store, each round's CPU, wall time and checkpoints; then a
 * small batch into an empty store and into the grown one. Both define the same metrics, whose
 * tables grow with the store as a real one's do. Prints figures, asserts nothing.
 */
export async function benchGrowth(rounds: number, events: number): Promise<void> {
  console.log(
    `\n## growth: ${rounds} rounds of ${events.toLocaleString('en')} events into one store, with ${BENCH_METRICS.length} metric definitions (${BENCH_METRICS.map((metric) => metric.metric_name).join(', ')})`,
  );
  const { dir } = await prepareDataDir({ metrics: true });
  const databasePath = openDataDir(dir).databasePath;
  const cpu: number[] = [];
  const checkpointMeans: number[] = [];
  let stored = 0;
  for (let round = 1; round <= rounds; round += 1) {
    writeLandingFiles(join(dir, 'landing'), events, roundRun(round, events));
    const run = await ingestTraced(dir);
    stored += run.stored;
    cpu.push(run.timed.cpuSeconds);
    checkpointMeans.push(mean(run.checkpoints));
    console.log(
      `round ${round}: ${run.timed.cpuSeconds.toFixed(1)} s CPU, ${run.timed.seconds.toFixed(1)} s wall, ${rate(run.stored, run.timed.seconds)}, batches: ${run.batches}, ${mean(run.batchMs).toFixed(0)} ms each, ${describeCheckpoints(run.checkpoints)}; peak RSS ${run.timed.maxRssMiB.toFixed(0)} MiB; store ${stored.toLocaleString('en')} events, ${(statSync(databasePath).size / 1024 / 1024).toFixed(0)} MiB`,
    );
  }

  // A grown store takes minutes to make: BENCH_KEEP_STORE keeps a copy for other runs (the
  // event-to-webhook bench's BENCH_LATENCY_STORE, say), made before the small batches add to it.
  const keep = process.env.BENCH_KEEP_STORE;
  if (keep) {
    cpSync(dir, keep, { recursive: true });
    console.log(`the grown store is kept in ${keep}`);
  }

  const after = rounds * events * MEAN_STEP_MS;
  const empty: IngestRun[] = [];
  const grown: IngestRun[] = [];
  for (let repeat = 1; repeat <= SMALL_BATCH_REPEATS; repeat += 1) {
    empty.push(await smallBatch((await prepareDataDir({ metrics: true })).dir, repeat, after));
    grown.push(await smallBatch(dir, repeat, after));
  }
  const describeSmall = (runs: IngestRun[]) =>
    runs
      .map(
        (run) =>
          `${run.timed.cpuSeconds.toFixed(2)} s CPU (batch ${mean(run.batchMs).toFixed(0)} ms, ${describeCheckpoints(run.checkpoints)})`,
      )
      .join('; ');
  console.log(
    `small batch of ${SMALL_BATCH_EVENTS.toLocaleString('en')} events into an empty store: ${describeSmall(empty)}`,
  );
  console.log(
    `the same into the store of ${stored.toLocaleString('en')} events: ${describeSmall(grown)}`,
  );

  const first = cpu[0] as number;
  const last = cpu[cpu.length - 1] as number;
  const roundsLabel =
    events === 1_000_000
      ? `${ordinal(rounds)} million / 1st million`
      : `${ordinal(rounds)} round / 1st round`;
  console.log(
    `${roundsLabel} CPU: ${(last / first).toFixed(2)} (${last.toFixed(1)} s / ${first.toFixed(1)} s of ${events.toLocaleString('en')} events; target <= 1.1, issue 37)`,
  );
  console.log(
    `checkpoint per batch, ${ordinal(rounds)} round / 1st: ${((checkpointMeans.at(-1) as number) / (checkpointMeans[0] as number)).toFixed(2)} (target: flat, issue 37)`,
  );
  const cpuOf = (runs: IngestRun[]) => median(runs.map((run) => run.timed.cpuSeconds));
  const batchOf = (runs: IngestRun[]) => median(runs.map((run) => mean(run.batchMs)));
  console.log(
    `one cds ingest process of a small batch, at ${shortCount(stored)} / empty: ${(cpuOf(grown) / cpuOf(empty)).toFixed(2)} (median CPU, ${cpuOf(grown).toFixed(2)} s / ${cpuOf(empty).toFixed(2)} s, opening the store and building its dedup index included); its traced batch alone ${(batchOf(grown) / batchOf(empty)).toFixed(2)} (${batchOf(grown).toFixed(0)} ms / ${batchOf(empty).toFixed(0)} ms)`,
  );

  const liveRun = (batch: number): GeneratorRun => ({
    seed: 950 + batch,
    start: new Date(FIRST_EVENT + after + (batch + 1) * SMALL_BATCH_EVENTS * MEAN_STEP_MS),
    collector: `growth-live-${batch}`,
  });
  const liveEmpty = await liveBatches(
    (await prepareDataDir({ metrics: true })).dir,
    LIVE_BATCHES,
    SMALL_BATCH_EVENTS,
    liveRun,
  );
  const liveGrown = await liveBatches(dir, LIVE_BATCHES, SMALL_BATCH_EVENTS, liveRun);
  const liveCpu = (batches: LiveBatch[]) => median(batches.map((batch) => batch.cpuSeconds));
  const liveMs = (batches: LiveBatch[]) => median(batches.map((batch) => batch.batchMs));
  const describeLive = (batches: LiveBatch[]) =>
    batches.map((batch) => `${batch.cpuSeconds.toFixed(2)} s CPU, ${batch.batchMs} ms`).join('; ');
  console.log(
    `live small batches into an empty store (cds ingest --watch): ${describeLive(liveEmpty)}`,
  );
  console.log(
    `the same into the store of ${stored.toLocaleString('en')} events: ${describeLive(liveGrown)}`,
  );
  console.log(
    `small batch at ${shortCount(stored)} / empty: ${(liveCpu(liveGrown) / liveCpu(liveEmpty)).toFixed(2)} (median CPU a batch of a running cds ingest --watch, ${liveCpu(liveGrown).toFixed(2)} s / ${liveCpu(liveEmpty).toFixed(2)} s; traced batch ${liveMs(liveGrown)} ms / ${liveMs(liveEmpty)} ms; target <= 1.1, issue 37)`,
  );
}
