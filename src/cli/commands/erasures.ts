import { Command } from 'commander';
import type { ErasureRecord } from '../../privacy/audit.js';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import {
  cursorOption,
  limitOption,
  type PagingFlags,
  tenantOption,
  tenantPath,
} from '../options.js';
import { output, printNextPage, printTable } from '../output.js';

export function erasuresCommand(): Command {
  const erasures = new Command('erasures').description('the erasure audit log');
  erasures
    .command('list')
    .description(
      "a tenant's erasures, newest first: who, when, what, when the database file was purged, and (cluster mode) when the last stream copy expires",
    )
    .addOption(tenantOption())
    .option('-w, --workspace <workspace>', 'only this workspace')
    .addOption(limitOption())
    .addOption(cursorOption())
    .action(
      async (options: { tenant: string; workspace?: string } & PagingFlags, command: Command) => {
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
            [
              'erased_at',
              'workspace_id',
              'profile_id',
              'actor',
              'events',
              'purged_at',
              // Cluster mode only: in the embedded mode it is null on every row.
              ...(value.erasures.some((record) => record.stream_copies_expire_at !== null)
                ? ['stream_copies_expire_at']
                : []),
            ],
          );
          printNextPage(value.next_cursor);
        });
      },
    );
  return erasures;
}
