import { Command, Option } from 'commander';
import { ValidationError } from '../../errors.js';
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

/** Exactly one way to name the customer. */
function target(options: EraseOptions): { profileId: string } | { type: string; value: string } {
  const given = [
    options.profileId === undefined ? null : { profileId: options.profileId },
    options.email === undefined ? null : { type: 'email', value: options.email },
    options.phone === undefined ? null : { type: 'phone', value: options.phone },
  ].filter((choice) => choice !== null);
  const [only] = given;
  if (given.length !== 1 || !only) {
    throw ValidationError.field(
      '--profile-id',
      'give exactly one of --profile-id, --email, --phone',
    );
  }
  return only;
}

export function eraseCommand(): Command {
  return new Command('erase')
    .description(
      'erase a customer: the profile, every profile merged into it, identifiers, metrics, memberships, history and events',
    )
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .addOption(
      new Option('--profile-id <profile_id>', 'the profile (a merged-away id erases its survivor)'),
    )
    .addOption(new Option('--email <email>', 'find the profile by email'))
    .addOption(new Option('--phone <phone>', 'find the profile by phone'))
    .option('--dry-run', 'show what would be erased and change nothing')
    .action(async (options: EraseOptions, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const chosen = target(options);
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
