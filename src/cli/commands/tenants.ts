import { Command } from 'commander';
import type { IssuedToken } from '../../tenancy/tokens.js';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { output, printLine, printTable } from '../output.js';
import { allPages } from '../paged.js';

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export function tenantsCommand(): Command {
  const tenants = new Command('tenants').description('create and list tenants (operator)');
  tenants
    .command('create <tenant>')
    .description('create a tenant with its workspaces and print its first tenant token, once')
    .option('-w, --workspace <workspace>', 'a workspace to create (repeatable)', collect, [])
    .addHelpText(
      'after',
      '\nExample:\n  cds tenants create acme --workspace store-eu --workspace store-us',
    )
    .action(async (tenantId: string, options: { workspace: string[] }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const created = await withAdminClient(
        globals,
        (client) =>
          client<{ tenant_id: string; workspaces: string[]; tenant_token: IssuedToken }>({
            method: 'POST',
            path: '/v1/operator/tenants',
            body: { tenant_id: tenantId, workspaces: options.workspace },
          }),
        'create',
      );
      output(globals.json, created, (value) => {
        const workspaces = value.workspaces.length > 0 ? value.workspaces.join(', ') : '(none yet)';
        printLine(`Created tenant ${value.tenant_id}; workspaces: ${workspaces}`);
        printLine('Tenant token (shown once; store it now):');
        printLine(value.tenant_token.token);
      });
    });
  tenants
    .command('list')
    .description('list tenants')
    .action(async (_options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const tenants = await withAdminClient(globals, (client) =>
        allPages<'tenants', Record<string, unknown>>(
          client,
          { method: 'GET', path: '/v1/operator/tenants' },
          'tenants',
        ),
      );
      const listed = { tenants };
      output(globals.json, listed, (value) =>
        printTable(value.tenants, ['tenant_id', 'workspaces', 'created_at']),
      );
    });
  return tenants;
}
