import { Command } from 'commander';
import { ConfigError } from '../../errors.js';
import type { IngestStatus } from '../../ingest/status.js';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import {
  cursorOption,
  limitOption,
  type PagingFlags,
  tenantOption,
  tenantPath,
  workspaceOption,
} from '../options.js';
import { output, printNextPage, printTable } from '../output.js';
import { allPages } from '../paged.js';

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
    .addOption(limitOption())
    .addOption(cursorOption())
    .action(async (options: PagingFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const listing = await withAdminClient(globals, (client) =>
        client<{ quarantined: Record<string, unknown>[]; next_cursor: string | null }>({
          method: 'GET',
          path: '/v1/operator/quarantine',
          query: { limit: options.limit, cursor: options.cursor },
        }),
      );
      output(globals.json, listing, (value) => {
        printTable(value.quarantined, [
          'quarantine_id',
          'tenant_id',
          'workspace_id',
          'lines',
          'quarantined_at',
          'reason',
        ]);
        printNextPage(value.next_cursor);
      });
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
      if (globals.server) {
        throw new ConfigError(
          '--server (or CDS_SERVER)',
          'cds ingest reads the landing files of this machine; a cds serve ingests its own (cds ingest --status --server URL shows how far it got)',
        );
      }
      const { runIngest } = await import('../ingest-landing.js');
      await runIngest(globals, options.watch ?? false);
    })
    .addCommand(quarantineCommand())
    .addCommand(rejectionsCommand());
}
