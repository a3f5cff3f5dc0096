import { Command, Option } from 'commander';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { tenantOption, tenantPath, workspaceOption } from '../options.js';
import { output, printLine } from '../output.js';

interface EraseOptions {
  tenant: string;
  workspace: string;
  profileId?: string;
  email?: string;
  phone?: string;
  dryRun?: boolean;
}

interface ErasureAnswer {
  profile_id: string;
  dry_run: boolean;
  erased: Record<string, number>;
}

/** The one way the customer was named; commander has refused two (`.conflicts`). */
function target(
  options: EraseOptions,
  command: Command,
): { profileId: string } | { type: string; value: string } {
  if (options.profileId !== undefined) return { profileId: options.profileId };
  if (options.email !== undefined) return { type: 'email', value: options.email };
  if (options.phone !== undefined) return { type: 'phone', value: options.phone };
  // Bad usage, exit 2, as commander's own refusals.
  return command.error('error: name the customer with one of --profile-id, --email, --phone');
}

export function eraseCommand(): Command {
  return new Command('erase')
    .description(
      'erase a customer: the profile, every profile merged into it, identifiers, metrics, memberships, history and events',
    )
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .addOption(
      new Option(
        '--profile-id <profile_id>',
        'the profile (a merged-away id erases its survivor)',
      ).conflicts(['email', 'phone']),
    )
    .addOption(new Option('--email <email>', 'find the profile by email').conflicts('phone'))
    .addOption(new Option('--phone <phone>', 'find the profile by phone'))
    .option('--dry-run', 'show what would be erased and change nothing')
    .action(async (options: EraseOptions, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const chosen = target(options, command);
      const profiles = tenantPath(options.tenant, 'workspaces', options.workspace, 'profiles');
      const answer = await withAdminClient(globals, async (client) => {
        const profileId =
          'profileId' in chosen
            ? chosen.profileId
            : (
                await client<{ profile_id: string }>({
                  method: 'GET',
                  path: `${profiles}/lookup`,
                  query: { [chosen.type]: chosen.value },
                })
              ).profile_id;
        return client<ErasureAnswer>({
          method: 'DELETE',
          path: `${profiles}/${encodeURIComponent(profileId)}`,
          query: { dry_run: options.dryRun ? 'true' : undefined },
        });
      });
      output(globals.json, answer, (value) => {
        const counts = Object.entries(value.erased)
          .map(([what, count]) => `${count} ${what.replaceAll('_', ' ')}`)
          .join(', ');
        printLine(
          `${value.dry_run ? 'Would erase' : 'Erased'} profile ${value.profile_id}: ${counts}`,
        );
      });
    });
}
