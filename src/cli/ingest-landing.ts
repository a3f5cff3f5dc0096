import { sealOrphans } from '../collector/landing-writer.js';
import { StoreLockedError } from '../errors.js';
import type { BatchResult } from '../ingest/batch.js';
import { listSealedFiles } from '../ingest/landing-files.js';
import { LandingLoop } from '../ingest/landing-loop.js';
import { prepareIndexes, saveIndexes } from '../ingest/saved-indexes.js';
import { componentLog } from '../telemetry/log.js';
import { configuredSender } from '../webhooks/sender.js';
import type { GlobalOptions } from './admin-request.js';
import { openContext } from './open-context.js';
import { output } from './output.js';
import { startProgress } from './progress.js';
import { closeOnSignals } from './serve.js';

interface Totals {
  batches: number;
  files: number;
  events: number;
  duplicates: number;
  rejected: number;
}

function add(totals: Totals, batch: BatchResult): void {
  totals.batches += 1;
  totals.files += batch.files;
  totals.events += batch.stored;
  totals.duplicates += batch.duplicates;
  totals.rejected += batch.rejected;
}

function describe(totals: Totals, startedAt: number): string {
  const seconds = Math.max((performance.now() - startedAt) / 1000, 0.001);
  const rate = Math.round(totals.events / seconds).toLocaleString('en');
  return `${totals.files} files, ${totals.events.toLocaleString('en')} events (${rate} events/s), ${totals.duplicates} duplicates, ${totals.rejected} rejected`;
}

/**
 * `cds ingest` takes no `--server`: what to do instead of opening a database another process
 * holds depends on that process, named by its command line.
 */
function whileHeld(holder: StoreLockedError['holder']): string {
  const command = holder?.command ?? '';
  if (command.includes('--no-ingest')) {
    return 'It runs with --no-ingest: stop it and run cds ingest, or start it again without --no-ingest';
  }
  if (/\b(serve|demo)\b/.test(command)) {
    return 'It ingests the landing files itself; cds ingest --status --server http://HOST:PORT shows how far it got';
  }
  return 'Stop it, then run cds ingest again';
}

/** `cds ingest`: the sealed landing files once, or, with `watch`, as they are sealed until a signal. */
export async function runIngest(globals: GlobalOptions, watch: boolean): Promise<void> {
  const context = await openContext({ data_dir: globals.dataDir }, 'existing').catch(
    (error: unknown) => {
      throw error instanceof StoreLockedError ? error.instead(whileHeld(error.holder)) : error;
    },
  );
  // As a daemon it delivers the webhooks its batches queue, as serve does; a single pass
  // leaves them in the outbox for the next process that sends.
  const sender = watch ? configuredSender(context) : null;
  await sealOrphans(context.dataDir.landingDir);
  const totals: Totals = { batches: 0, files: 0, events: 0, duplicates: 0, rejected: 0 };
  const startedAt = performance.now();
  // A single pass knows its backlog: the bytes of the files sealed now. A watch has no end.
  const backlogBytes = watch
    ? null
    : (await listSealedFiles(context.dataDir.landingDir)).reduce(
        (sum, file) => sum + file.bytes,
        0,
      );
  const progress = watch
    ? startProgress('ingest (watching)', null, {
        plainLine: (line) => componentLog('ingest').info(line),
      })
    : startProgress('ingest', backlogBytes);
  const loop = new LandingLoop(context, {
    maxBatchEvents: context.config.max_batch_events,
    intervalMs: context.config.ingest_interval_ms,
    onBatch: (batch) => {
      add(totals, batch);
      sender?.tick();
    },
    onFilesDone: ({ bytes, lines }) => progress.advance(bytes, lines),
  });
  if (watch) {
    // Loaded before files come, as in serve.
    void prepareIndexes(context.store);
    progress.say(`watching ${context.dataDir.landingDir}`);
    loop.start({ watch: true });
    // As in serve: once the store has reopened the database, the batch is tried at once.
    context.store.onReopened(() => loop.catchUp().catch(() => undefined));
    sender?.start();
    await closeOnSignals({
      close: async () => {
        await loop.stop();
        await sender?.stop();
        await saveIndexes(context.store);
        await context.store.close();
      },
    });
  } else {
    try {
      await loop.drain();
      await saveIndexes(context.store);
    } catch (error) {
      progress.stop();
      throw error;
    } finally {
      await context.store.close();
    }
  }
  progress.done(describe(totals, startedAt));
  output(globals.json, totals, () =>
    process.stdout.write(`Ingested ${describe(totals, startedAt)}\n`),
  );
}
