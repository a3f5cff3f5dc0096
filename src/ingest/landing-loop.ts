import { watch } from 'chokidar';
import type { Context } from '../context.js';
import { componentLog } from '../telemetry/log.js';
import { traced } from '../trace.js';
import type { BatchResult } from './batch.js';
import { ingestIsolating } from './isolate.js';
import { listSealedFiles, type SealedFile } from './landing-files.js';
import { landingSource } from './landing-source.js';
import { type IngestFailure, LoopHealth } from './loop-health.js';
import type { IngestSource } from './source.js';
import { splitSealedFile } from './split-file.js';

export interface LandingLoopConfig {
  /** Roughly how many events one transaction takes (design §4 `max_batch_events`). */
  maxBatchEvents: number;
  /** How often the loop looks for sealed files even when no watcher event came. */
  intervalMs: number;
  /** Called after each committed batch (progress lines, counters). */
  onBatch?: (batch: BatchResult) => void;
  /** Called once the files of a drained batch are done: their bytes and the lines they held. */
  onFilesDone?: (done: { bytes: number; lines: number }) => void;
  /**
   * Called when a drain finds no sealed file left: a collector in this process may seal what it
   * holds now rather than when its age is due (its seal asks for a tick).
   */
  onCaughtUp?: () => Promise<void>;
}

const log = () => componentLog('ingest');

/**
 * No line a collector writes is shorter: `received_at`, `source`, `collector_id` and an envelope
 * with its required fields. A smaller file cannot hold too many lines, so it is not read to count.
 */
const MIN_LANDING_LINE_BYTES = 100;

/** Before the first batch tells us better, a landing line is taken to be this long. */
const INITIAL_BYTES_PER_LINE = 400;

/**
 * The landing loop: drains sealed landing files in micro-batches through the ingest engine
 * (landing-source.ts). A tick never overlaps another; the timer and the watcher only ask for a
 * tick.
 */
export class LandingLoop {
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private watcher: ReturnType<typeof watch> | null = null;
  private bytesPerLine = INITIAL_BYTES_PER_LINE;
  private readonly health: LoopHealth;
  private readonly source: IngestSource<string>;

  constructor(
    private readonly context: Context,
    private readonly config: LandingLoopConfig,
  ) {
    this.health = new LoopHealth(context, {
      log,
      firstRetryMs: config.intervalMs,
      failedMessage:
        'ingest failed; the landing files stay, and the batch is tried again after growing pauses',
    });
    this.source = landingSource(context);
  }

  /** The failed batches in a row, until one commits. */
  get failure(): IngestFailure | null {
    return this.health.failure;
  }

  /**
   * Runs the upkeep of metrics and segments before each batch of the files sealed now (its
   * maintenance once a second at most, LoopHealth.upkeep), or once when there is none. Not again
   * after the last batch: live traffic drains once per sealed file, and the next drain starts
   * with it (it ran twice a cycle, its reads on the way to the next batch).
   */
  async drain(): Promise<BatchResult[]> {
    const results: BatchResult[] = [];
    for (;;) {
      const batch = this.nextBatch(await this.sealedFilesInBatchSizes());
      if (batch.length === 0) {
        if (results.length === 0) await this.health.upkeep({ beforeBatch: false });
        await this.config.onCaughtUp?.();
        return results;
      }
      // Upkeep goes between batches too, so a steady flow of files does not starve it.
      await this.health.upkeep({ beforeBatch: true });
      const startedAt = performance.now();
      const outcome = await traced('ingest batch', () =>
        ingestIsolating(
          this.context,
          this.source,
          batch.map((file) => file.path),
        ),
      );
      const seconds = (performance.now() - startedAt) / 1000;
      const bytes = batch.reduce((sum, file) => sum + file.bytes, 0);
      const lines = outcome.batches.reduce((sum, result) => sum + result.lines, 0);
      if (lines > 0) this.bytesPerLine = Math.max(1, Math.round(bytes / lines));
      this.health.committed(outcome, seconds, Math.min(...batch.map((file) => file.modifiedAt)));
      for (const result of outcome.batches) {
        results.push(result);
        this.config.onBatch?.(result);
      }
      this.config.onFilesDone?.({ bytes, lines });
    }
  }

  /** Runs on a timer and on file events until `stop`. */
  start(options: { watch: boolean }): void {
    this.timer = setInterval(() => this.tick(), this.config.intervalMs);
    if (options.watch) {
      this.watcher = watch(this.context.dataDir.landingDir, { ignoreInitial: false, depth: 8 });
      this.watcher.on('add', (path) => {
        if (path.endsWith('.ndjson')) this.tick();
      });
    }
    this.tick();
  }

  /** Stops asking for ticks and waits for the batch under way to commit. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.watcher?.close();
    this.watcher = null;
    this.again = false;
    await this.running;
  }

  /** Waits for the batch under way, then drains what is sealed now; throws if that fails. */
  async catchUp(): Promise<void> {
    await this.running;
    this.health.endPause();
    this.tick();
    await this.running;
    if (this.failure) throw this.failure.error;
  }

  tick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.health.pauseLeftMs() > 0) return;
    this.running = this.health
      .attempt(async () => {
        await this.drain();
      })
      .finally(() => {
        this.running = null;
        if (this.again && this.timer) {
          this.again = false;
          this.tick();
        }
      });
  }

  /**
   * The sealed files, the first one cut into parts first when it alone holds more lines than a
   * batch may take (a collector seals at 64 MiB, about 230,000 events): `max_batch_events` then
   * bounds the memory of every batch. Its lines are counted, not estimated, so a file left whole
   * by a split that a crash cut off is always split again before its parts are read.
   */
  private async sealedFilesInBatchSizes(): Promise<SealedFile[]> {
    const files = await listSealedFiles(this.context.dataDir.landingDir);
    const [first] = files;
    const mayBeTooLong =
      first !== undefined && first.bytes > this.config.maxBatchEvents * MIN_LANDING_LINE_BYTES;
    if (!mayBeTooLong || (await splitSealedFile(first.path, this.config.maxBatchEvents)) === 0) {
      return files;
    }
    return listSealedFiles(this.context.dataDir.landingDir);
  }

  private nextBatch(files: SealedFile[]): SealedFile[] {
    const batch: SealedFile[] = [];
    let estimatedEvents = 0;
    for (const file of files) {
      const events = Math.ceil(file.bytes / this.bytesPerLine);
      if (batch.length > 0 && estimatedEvents + events > this.config.maxBatchEvents) break;
      batch.push(file);
      estimatedEvents += events;
    }
    return batch;
  }
}
