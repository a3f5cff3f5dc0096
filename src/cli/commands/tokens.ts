import { Command, Option } from 'commander';
import type { IssuedToken } from '../../tenancy/tokens.js';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { tenantOption, tenantPath } from '../options.js';
import { output, printErrorLine, printLine, printTable } from '../output.js';
import { allPages } from '../paged.js';

function printIssued(value: IssuedToken): void {
  const scope = value.workspace_id ? ` for workspace ${value.workspace_id}` : '';
  printLine(`Issued ${value.kind} token ${value.token_id}${scope} (shown once; store it now):`);
  printLine(value.token);
}

export function tokensCommand(): Command {
  const tokens = new Command('tokens').description(
    'issue, list and revoke tokens, and print the operator token',
  );
  tokens
    .command('issue-tenant <tenant>')
    .description('issue another tenant token (operator)')
    .option('--name <name>', 'a label for the token')
    .action(async (tenantId: string, options: { name?: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const issued = await withAdminClient(globals, (client) =>
        client<IssuedToken>({
          method: 'POST',
          path: `/v1/operator/tenants/${encodeURIComponent(tenantId)}/tenant-tokens`,
          body: { name: options.name ?? null },
        }),
      );
      output(globals.json, issued, printIssued);
    });
  tokens
    .command('issue')
    .description('mint a workspace (read-only) or collector token')
    .addOption(tenantOption())
    .addOption(
      new Option('--kind <kind>', 'token kind')
        .choices(['workspace', 'collector'])
        .makeOptionMandatory(),
    )
    .option('-w, --workspace <workspace>', 'workspace id (required for workspace tokens)')
    .requiredOption('--name <name>', 'a label for the token')
    .addHelpText(
      'after',
      '\nExample:\n  cds tokens issue --tenant acme --kind workspace --workspace store-eu --name analytics',
    )
    .action(
      async (
        options: { tenant: string; kind: string; workspace?: string; name: string },
        command: Command,
      ) => {
        const globals = command.optsWithGlobals<GlobalOptions>();
        const issued = await withAdminClient(globals, (client) =>
          client<IssuedToken>({
            method: 'POST',
            path: tenantPath(options.tenant, 'tokens'),
            body: { kind: options.kind, workspace_id: options.workspace, name: options.name },
          }),
        );
        output(globals.json, issued, printIssued);
      },
    );
  tokens
    .command('list')
    .description("list a tenant's tokens (never their secrets)")
    .addOption(tenantOption())
    .action(async (options: { tenant: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const tokens = await withAdminClient(globals, (client) =>
        allPages<'tokens', Record<string, unknown>>(
          client,
          { method: 'GET', path: tenantPath(options.tenant, 'tokens') },
          'tokens',
        ),
      );
      const listed = { tokens };
      output(globals.json, listed, (value) =>
        printTable(value.tokens, [
          'token_id',
          'kind',
          'workspace_id',
          'name',
          'created_at',
          'revoked_at',
        ]),
      );
    });
  tokens
    .command('revoke <token_id>')
    .description('revoke a token; it stops working at once')
    .addOption(tenantOption())
    .action(async (tokenId: string, options: { tenant: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      await withAdminClient(globals, (client) =>
        client({
          method: 'DELETE',
          path: tenantPath(options.tenant, 'tokens', tokenId),
        }),
      );
      output(globals.json, { token_id: tokenId, revoked: true }, () =>
        printLine(`Revoked ${tokenId}`),
      );
    });
  tokens
    .command('operator')
    .description(
      "print the operator token, derived from the data dir's master key (for a Prometheus scrape of /metrics)",
    )
    .action(async (_options: unknown, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const { printableOperatorCredential } = await import('../operator-credential.js');
      const { token, derivedFrom } = printableOperatorCredential(globals.dataDir);
      // On stderr, so that stdout is the token alone (`cds tokens operator > token-file`).
      printErrorLine(
        `cds: this is a secret: the operator token acts on every tenant. It is derived from ${derivedFrom} and changes only with that key; keep it in a file only its reader can read.`,
      );
      output(globals.json, { kind: 'operator', token, derived_from: derivedFrom }, (value) =>
        printLine(value.token),
      );
    });
  return tokens;
}
