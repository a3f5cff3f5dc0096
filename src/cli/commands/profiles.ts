import { Command } from 'commander';
import type { ProfileView } from '../../identity/profile-schemas.js';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { tenantOption, tenantPath, workspaceOption } from '../options.js';
import { output, printLine, printTable } from '../output.js';

export function profilesCommand(): Command {
  const profiles = new Command('profiles').description('read customer profiles');

  profiles
    .command('show <profile_id>')
    .description('show a profile: identifiers (masked per policy), metrics and segments')
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .action(
      async (
        profileId: string,
        options: { tenant: string; workspace: string },
        command: Command,
      ) => {
        const globals = command.optsWithGlobals<GlobalOptions>();
        const view = await withAdminClient(globals, (client) =>
          client<ProfileView>({
            method: 'GET',
            path: tenantPath(
              options.tenant,
              'workspaces',
              options.workspace,
              'profiles',
              profileId,
            ),
          }),
        );
        output(globals.json, view, (value) => {
          printLine(
            `${value.profile_id}  first seen ${value.created_at}  last seen ${value.last_seen_at}`,
          );
          if (value.merged_profile_ids.length > 0) {
            printLine(`merged: ${value.merged_profile_ids.join(', ')}`);
          }
          process.stdout.write('\nidentifiers\n');
          printTable(value.identifiers, ['type', 'tier', 'value', 'masked_value', 'status']);
          process.stdout.write('\nmetrics\n');
          printTable(
            Object.entries(value.metrics).map(([metric, metricValue]) => ({
              metric,
              value: metricValue,
            })),
            ['metric', 'value'],
          );
          process.stdout.write('\nsegments\n');
          printTable(value.segments, ['segment_id', 'entered_at']);
        });
      },
    );

  return profiles;
}
