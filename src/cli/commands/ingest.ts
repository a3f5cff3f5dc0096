import { Command } from 'commander';
import ora from 'ora';
import { sealOrphans } from '../../collector/landing-writer.js';
import type { BatchResult } from '../../ingest/batch.js';
import { IngestLoop } from '../../ingest/loop.js';
import type { IngestStatus } from '../../ingest/status.js';
import { configuredSender } from '../../webhooks/sender.js';
import { type GlobalOptions, withAdminClient } from '../admin-client.js';
import { openContext } from '../open-context.js';
import { output, printErrorLine, printTable } from '../output.js';
import { closeOnSignals } from '../serve.js';

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
 * The operator credential (the default) reads every counter; another `--token` reads only the
 * public part of `/readyz`, and the table shows what came.
 */
async function printStatus(globals: GlobalOptions): Promise<void> {
  const ready = await withAdminClient(globals, (client) =>
    client<{ ingest: Partial<IngestStatus> }>({ method: 'GET', path: '/readyz' }),
  );
  output(globals.json, ready.ingest, (status) => printTable([{ ...status }], Object.keys(status)));
}

export function ingestCommand(): Command {
  return new Command('ingest')
    .description(
      'ingest sealed landing files into the database once, or keep doing so with --watch',
    )
    .option('--watch', 'keep running: ingest files as they are sealed, until SIGTERM')
    .option('--status', 'print the ingest counters and backlog, then exit')
    .action(async (options: { watch?: boolean; status?: boolean }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      if (options.status) {
        await printStatus(globals);
        return;
      }
      const context = await openContext({ data_dir: globals.dataDir });
      // As a daemon it delivers the webhooks its batches queue, as serve does; a single pass
      // leaves them in the outbox for the next process that sends.
      const sender = options.watch ? configuredSender(context) : null;
      await sealOrphans(context.dataDir.landingDir);
      const totals: Totals = { batches: 0, files: 0, events: 0, duplicates: 0, rejected: 0 };
      const startedAt = performance.now();
      const spinner = ora({
        text: 'looking for sealed landing files',
        isEnabled: process.stderr.isTTY,
      }).start();
      const loop = new IngestLoop(context, {
        maxBatchEvents: context.config.max_batch_events,
        intervalMs: context.config.ingest_interval_ms,
        onBatch: (batch) => {
          add(totals, batch);
          spinner.text = describe(totals, startedAt);
          sender?.tick();
        },
        report: (line) => {
          spinner.clear();
          printErrorLine(line);
          spinner.render();
        },
      });
      if (options.watch) {
        spinner.text = `watching ${context.dataDir.landingDir}`;
        loop.start({ watch: true });
        sender?.start();
        await closeOnSignals({
          close: async () => {
            await loop.stop();
            await sender?.stop();
            await context.store.close();
          },
        });
        spinner.stop();
      } else {
        try {
          await loop.drain();
        } finally {
          await context.store.close();
        }
        spinner.stop();
      }
      output(globals.json, totals, () =>
        process.stdout.write(`Ingested ${describe(totals, startedAt)}\n`),
      );
    });
}
