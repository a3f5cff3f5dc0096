import { Command } from 'commander';
import { type GlobalOptions, withAdminClient } from '../admin-client.js';
import { tenantOption, tenantPath } from '../options.js';
import { output, printTable } from '../output.js';

interface ErasureRecord {
  erasure_id: string;
  workspace_id: string;
  profile_id: string;
  actor: string;
  erased_at: string;
  purged_at: string | null;
  erased: Record<string, number>;
}

export function erasuresCommand(): Command {
  const erasures = new Command('erasures').description('the erasure audit log');
  erasures
    .command('list')
    .description(
      "a tenant's erasures, newest first: who, when, what, and when the database file was purged",
    )
    .addOption(tenantOption())
    .option('-w, --workspace <workspace>', 'only this workspace')
    .option('--limit <n>', 'page size (1-500)')
    .option('--cursor <cursor>', 'next_cursor of the previous page')
    .action(
      async (
        options: { tenant: string; workspace?: string; limit?: string; cursor?: string },
        command: Command,
      ) => {
        const globals = command.optsWithGlobals<GlobalOptions>();
        const page = await withAdminClient(globals, (client) =>
          client<{ erasures: ErasureRecord[]; next_cursor: string | null }>({
            method: 'GET',
            path: tenantPath(options.tenant, 'erasures'),
            query: {
              workspace_id: options.workspace,
              limit: options.limit,
              cursor: options.cursor,
            },
          }),
        );
        output(globals.json, page, (value) => {
          printTable(
            value.erasures.map((record) => ({ ...record, events: record.erased.events })),
            ['erased_at', 'workspace_id', 'profile_id', 'actor', 'events', 'purged_at'],
          );
          if (value.next_cursor) process.stdout.write(`next page: --cursor ${value.next_cursor}\n`);
        });
      },
    );
  return erasures;
}
