import { Command } from 'commander';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { tenantOption, tenantPath } from '../options.js';
import { output, printTable } from '../output.js';
import { allPages } from '../paged.js';

export function metricsCommand(): Command {
  const metrics = new Command('metrics').description('metric definitions');

  metrics
    .command('list')
    .description('list metric definitions')
    .addOption(tenantOption())
    .option('-w, --workspace <workspace>', 'only those that apply to this workspace')
    .action(async (options: { tenant: string; workspace?: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const definitions = await withAdminClient(globals, (client) =>
        allPages<'metric_definitions', Record<string, unknown>>(
          client,
          {
            method: 'GET',
            path: tenantPath(options.tenant, 'metric-definitions'),
            query: { workspace_id: options.workspace },
          },
          'metric_definitions',
        ),
      );
      const listing = { metric_definitions: definitions };
      output(globals.json, listing, (value) =>
        printTable(value.metric_definitions, [
          'workspace_id',
          'metric_name',
          'event_name',
          'value_kind',
          'value_path',
          'aggregation',
          'keep',
          'window_days',
        ]),
      );
    });

  return metrics;
}
