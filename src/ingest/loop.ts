import { watch } from 'chokidar';
import { systemClock } from '../clock.js';
import type { Context } from '../context.js';
import { componentLog } from '../telemetry/log.js';
import { prometheusSeries } from '../telemetry/prometheus.js';
import { traced } from '../trace.js';
import type { BatchResult } from './batch.js';
import { ingestIsolating } from './isolate.js';
import { listSealedFiles, type SealedFile } from './landing-files.js';
import { FailureStreak, type IngestFailure, TolerantUpkeep } from './loop-health.js';
import { splitSealedFile } from './split-file.js';

export interface IngestLoopConfig {
  /** Roughly how many events one transaction takes (design §4 `max_batch_events`). */
  maxBatchEvents: number;
  /** How often the loop looks for sealed files even when no watcher event came. */
  intervalMs: number;
  /** Called after each committed batch (progress lines, counters). */
  onBatch?: (batch: BatchResult) => void;
  /** Called once the files of a drained batch are done: their bytes and the lines they held. */
  onFilesDone?: (done: { bytes: number; lines: number }) => void;
}

const log = () => componentLog('ingest');

/**
 * Metrics and one log record for the batches an ingest pass committed; `oldestFileAt` is when the
 * oldest of their lines was written (a landing file's modification time, a message's publish time).
 */
export function recordBatches(batches: BatchResult[], seconds: number, oldestFileAt: number): void {
  if (batches.length === 0) return;
  prometheusSeries().ingestBatches.inc({ outcome: 'committed' }, batches.length);
  prometheusSeries().ingestBatchDuration.observe(seconds);
  // Against the file's modification time, which is the system clock's.
  prometheusSeries().ingestLag.set(
    Math.max(0, (systemClock.now().getTime() - oldestFileAt) / 1000),
  );
  const total = (pick: (batch: BatchResult) => number) =>
    batches.reduce((sum, batch) => sum + pick(batch), 0);
  const counts = {
    files: total((batch) => batch.files),
    lines: total((batch) => batch.lines),
    stored: total((batch) => batch.stored),
    duplicates: total((batch) => batch.duplicates),
    rejected: total((batch) => batch.rejected),
    unparsable: total((batch) => batch.unparsable),
    new_profiles: total((batch) => batch.newProfiles),
    merges: total((batch) => batch.merges),
  };
  prometheusSeries().ingestEvents.inc({ outcome: 'stored' }, counts.stored);
  prometheusSeries().ingestEvents.inc({ outcome: 'duplicate' }, counts.duplicates);
  prometheusSeries().ingestEvents.inc({ outcome: 'rejected' }, counts.rejected);
  prometheusSeries().ingestEvents.inc({ outcome: 'unparsable' }, counts.unparsable);
  log().info({ ...counts, duration_ms: Math.round(seconds * 1000) }, 'ingest batch committed');
}

/**
 * No line a collector writes is shorter: `received_at`, `source`, `collector_id` and an envelope
 * with its required fields. A smaller file cannot hold too many lines, so it is not read to count.
 */
const MIN_LANDING_LINE_BYTES = 100;

/** Before the first batch tells us better, a landing line is taken to be this long. */
const INITIAL_BYTES_PER_LINE = 400;

/**
 * Drains sealed landing files in micro-batches. A tick never overlaps another; the timer and the
 * watcher only ask for a tick.
 */
export class IngestLoop {
  private running: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  private watcher: ReturnType<typeof watch> | null = null;
  private bytesPerLine = INITIAL_BYTES_PER_LINE;
  private readonly streak: FailureStreak;
  private readonly upkeep: TolerantUpkeep;

  constructor(
    private readonly context: Context,
    private readonly config: IngestLoopConfig,
  ) {
    this.streak = new FailureStreak(
      context,
      log,
      config.intervalMs,
      'ingest failed; the landing files stay, and the batch is tried again after growing pauses',
    );
    this.upkeep = new TolerantUpkeep(context, log);
  }

  /** The failed batches in a row, until one commits. */
  get failure(): IngestFailure | null {
    return this.streak.failure;
  }

  /** Ingests every file sealed now, batch after batch, then runs the upkeep of metrics and segments. */
  async drain(): Promise<BatchResult[]> {
    const results: BatchResult[] = [];
    for (;;) {
      // Upkeep goes between batches too, so a steady stream of files does not starve it.
      await this.upkeep.run();
      const batch = this.nextBatch(await this.sealedFilesInBatchSizes());
      if (batch.length === 0) return results;
      const startedAt = performance.now();
      const { batches, quarantined } = await traced('ingest batch', () =>
        ingestIsolating(
          this.context,
          batch.map((file) => file.path),
        ),
      );
      const seconds = (performance.now() - startedAt) / 1000;
      for (const file of quarantined) {
        prometheusSeries().quarantinedParts.inc();
        log().warn(
          {
            tenant_id: file.tenant_id,
            lines: file.lines,
            reason: file.reason,
            quarantine_id: file.quarantine_id,
          },
          `ingest quarantined ${file.lines} line(s) of tenant ${file.tenant_id ?? '?'} that fail every batch; the other lines were ingested (see cds ingest quarantine list)`,
        );
      }
      const bytes = batch.reduce((sum, file) => sum + file.bytes, 0);
      const lines = batches.reduce((sum, result) => sum + result.lines, 0);
      if (lines > 0) this.bytesPerLine = Math.max(1, Math.round(bytes / lines));
      recordBatches(batches, seconds, Math.min(...batch.map((file) => file.modifiedAt)));
      for (const result of batches) {
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
    this.streak.endPause();
    this.tick();
    await this.running;
    if (this.failure) throw this.failure.error;
  }

  tick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.streak.pauseLeftMs() > 0) return;
    this.running = this.drain()
      .then(
        () => this.streak.succeeded(),
        (error: unknown) => this.streak.failed(error as Error),
      )
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
