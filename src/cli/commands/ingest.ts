import { Command } from 'commander';
import { sealOrphans } from '../../collector/landing-writer.js';
import type { BatchResult } from '../../ingest/batch.js';
import { listSealedFiles } from '../../ingest/landing-files.js';
import { IngestLoop } from '../../ingest/loop.js';
import type { IngestStatus } from '../../ingest/status.js';
import { componentLog } from '../../telemetry/log.js';
import { configuredSender } from '../../webhooks/sender.js';
import { type GlobalOptions, withAdminClient } from '../admin-client.js';
import { openContext } from '../open-context.js';
import { tenantOption, tenantPath, workspaceOption } from '../options.js';
import { output, printTable } from '../output.js';
import { allPages } from '../paged.js';
import { startProgress } from '../progress.js';
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

/** `cds ingest rejections`: the lines of a workspace ingest refused, and why, every page of them. */
function rejectionsCommand(): Command {
  return new Command('rejections')
    .description('list the events ingest refused in a workspace, newest first, with the reason')
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .action(async (options: { tenant: string; workspace: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const rejections = await withAdminClient(globals, (client) =>
        allPages<'rejections', Record<string, unknown>>(
          client,
          {
            method: 'GET',
            path: tenantPath(options.tenant, 'rejections'),
            query: { workspace_id: options.workspace },
          },
          'rejections',
        ),
      );
      output(globals.json, { rejections }, (value) =>
        printTable(value.rejections, [
          'event_id',
          'event_name',
          'reason',
          'received_at',
          'rejected_at',
        ]),
      );
    });
}

/** `cds ingest quarantine list|retry`: the lines ingest set aside because they fail every batch. */
function quarantineCommand(): Command {
  const quarantine = new Command('quarantine').description(
    'landing lines set aside because every batch holding them failed, with the reason',
  );
  quarantine
    .command('list')
    .description('list quarantined files, oldest first')
    .option('--limit <n>', 'how many (1-500)')
    .action(async (options: { limit?: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const listing = await withAdminClient(globals, (client) =>
        client<{ quarantined: Record<string, unknown>[] }>({
          method: 'GET',
          path: '/v1/operator/quarantine',
          query: { limit: options.limit },
        }),
      );
      output(globals.json, listing, (value) =>
        printTable(value.quarantined, [
          'quarantine_id',
          'tenant_id',
          'workspace_id',
          'lines',
          'quarantined_at',
          'reason',
        ]),
      );
    });
  quarantine
    .command('retry [quarantine_id]')
    .description('put quarantined files back to be ingested again: one, or all')
    .action(async (quarantineId: string | undefined, _options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const result = await withAdminClient(globals, (client) =>
        client<{ requeued: string[] }>({
          method: 'POST',
          path: '/v1/operator/quarantine/retry',
          body: { quarantine_id: quarantineId ?? null },
        }),
      );
      output(globals.json, result, (value) =>
        process.stdout.write(
          `${value.requeued.length} quarantined file(s) put back to be ingested again\n`,
        ),
      );
    });
  return quarantine;
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
      // A single pass knows its backlog: the bytes of the files sealed now. A watch has no end.
      const backlogBytes = options.watch
        ? null
        : (await listSealedFiles(context.dataDir.landingDir)).reduce(
            (sum, file) => sum + file.bytes,
            0,
          );
      const progress = options.watch
        ? startProgress('ingest (watching)', null, {
            plainLine: (line) => componentLog('ingest').info(line),
          })
        : startProgress('ingest', backlogBytes);
      const loop = new IngestLoop(context, {
        maxBatchEvents: context.config.max_batch_events,
        intervalMs: context.config.ingest_interval_ms,
        onBatch: (batch) => {
          add(totals, batch);
          sender?.tick();
        },
        onFilesDone: ({ bytes, lines }) => progress.advance(bytes, lines),
      });
      if (options.watch) {
        progress.say(`watching ${context.dataDir.landingDir}`);
        loop.start({ watch: true });
        // As in serve: once the store has reopened the database, the batch is tried at once.
        context.store.onReopened(() => loop.catchUp().catch(() => undefined));
        sender?.start();
        await closeOnSignals({
          close: async () => {
            await loop.stop();
            await sender?.stop();
            await context.store.close();
          },
        });
      } else {
        try {
          await loop.drain();
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
    })
    .addCommand(quarantineCommand())
    .addCommand(rejectionsCommand());
}
