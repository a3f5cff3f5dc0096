import { Argument, Command, InvalidArgumentError, Option } from 'commander';
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
import { output, printJson, printLine, printNextPage, printTable } from '../output.js';

const STATUSES = ['draft', 'active', 'paused', 'archived'];

function parseJson(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch {
    throw new InvalidArgumentError(
      'must be JSON, e.g. \'{"metric":"orders","op":"gte","value":3}\'',
    );
  }
}

const predicateOption = () =>
  new Option('-p, --predicate <json>', 'the rule, as JSON')
    .argParser(parseJson)
    .makeOptionMandatory();

function segmentsPath(tenant: string, ...rest: string[]): string {
  return tenantPath(tenant, 'segments', ...rest);
}

interface Scope {
  tenant: string;
  workspace: string;
}

export function segmentsCommand(): Command {
  const segments = new Command('segments').description('manage segment definitions');

  segments
    .command('list')
    .description('list segments with live member counts')
    .addOption(tenantOption())
    .option('-w, --workspace <workspace>', 'only this workspace')
    .addOption(limitOption())
    .addOption(cursorOption())
    .action(
      async (options: { tenant: string; workspace?: string } & PagingFlags, command: Command) => {
        const globals = command.optsWithGlobals<GlobalOptions>();
        const page = await withAdminClient(globals, (client) =>
          client<{ segments: Record<string, unknown>[]; next_cursor: string | null }>({
            method: 'GET',
            path: segmentsPath(options.tenant),
            query: {
              workspace_id: options.workspace,
              limit: options.limit,
              cursor: options.cursor,
            },
          }),
        );
        output(globals.json, page, (value) => {
          printTable(value.segments, [
            'workspace_id',
            'segment_id',
            'display_name',
            'status',
            'member_count',
            'evaluation_error',
          ]);
          printNextPage(value.next_cursor);
        });
      },
    );

  segments
    .command('get <segment_id>')
    .description('show one segment definition')
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .action(async (segmentId: string, options: Scope, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const segment = await withAdminClient(globals, (client) =>
        client({
          method: 'GET',
          path: segmentsPath(options.tenant, segmentId, 'definition'),
          query: { workspace_id: options.workspace },
        }),
      );
      printJson(segment);
    });

  segments
    .command('members <segment_id>')
    .description("list a segment's members, masked like the customer table")
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .addOption(limitOption())
    .addOption(cursorOption())
    .action(async (segmentId: string, options: Scope & PagingFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const page = await withAdminClient(globals, (client) =>
        client<{ members: Record<string, unknown>[]; next_cursor: string | null }>({
          method: 'GET',
          path: segmentsPath(options.tenant, segmentId, 'members'),
          query: {
            workspace_id: options.workspace,
            limit: options.limit,
            cursor: options.cursor,
          },
        }),
      );
      output(globals.json, page, (value) => {
        printTable(value.members, ['profile_id', 'email', 'phone', 'last_seen_at', 'metrics']);
        printNextPage(value.next_cursor);
      });
    });

  segments
    .command('create <segment_id>')
    .description('create a segment (create-only)')
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .requiredOption('--name <display_name>', 'human-readable name')
    .addOption(predicateOption())
    .addOption(
      new Option('--status <status>', 'initial status').choices(STATUSES).default('active'),
    )
    .option(
      '--automations <json>',
      'e.g. {"on_enter":true,"on_exit":false,"on_backfill":false}',
      parseJson,
    )
    .addHelpText(
      'after',
      '\nExample:\n  cds segments create big-spenders -t acme -w store-eu --name "Big spenders" \\\n    --predicate \'{"metric":"revenue","op":"gte","value":500}\'',
    )
    .action(
      async (
        segmentId: string,
        options: Scope & {
          name: string;
          predicate: unknown;
          status: string;
          automations?: unknown;
        },
        command: Command,
      ) => {
        const globals = command.optsWithGlobals<GlobalOptions>();
        const segment = await withAdminClient(globals, (client) =>
          client<{ segment_id: string; status: string }>({
            method: 'PUT',
            path: segmentsPath(options.tenant, segmentId),
            body: {
              workspace_id: options.workspace,
              display_name: options.name,
              predicate: options.predicate,
              status: options.status,
              automations: options.automations,
            },
          }),
        );
        output(globals.json, segment, (value) =>
          printLine(`Created segment ${value.segment_id} (${value.status})`),
        );
      },
    );

  segments
    .command('preview')
    .description('count the profiles a rule would select, without saving it')
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .addOption(predicateOption())
    .action(async (options: Scope & { predicate: unknown }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const preview = await withAdminClient(globals, (client) =>
        client<Record<string, unknown>>({
          method: 'POST',
          path: segmentsPath(options.tenant, 'preview'),
          body: { workspace_id: options.workspace, predicate: options.predicate },
        }),
      );
      output(globals.json, preview, (value) =>
        printTable(
          [value],
          [
            'matched_profiles',
            'scanned_profiles',
            'truncated',
            'workspace_profiles',
            'workspace_identified_profiles',
          ],
        ),
      );
    });

  segments
    .command('status')
    .description('set a segment status')
    .argument('<segment_id>')
    .addArgument(new Argument('<status>').choices(STATUSES))
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .action(async (segmentId: string, status: string, options: Scope, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const segment = await withAdminClient(globals, (client) =>
        client<{ segment_id: string; status: string }>({
          method: 'PUT',
          path: segmentsPath(options.tenant, segmentId, 'status'),
          body: { workspace_id: options.workspace, status },
        }),
      );
      output(globals.json, segment, (value) =>
        printLine(`Segment ${value.segment_id} is ${value.status}`),
      );
    });

  segments
    .command('delete <segment_id>')
    .description('delete a segment definition (archive it to retire it instead)')
    .addOption(tenantOption())
    .addOption(workspaceOption())
    .action(async (segmentId: string, options: Scope, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      await withAdminClient(globals, (client) =>
        client({
          method: 'DELETE',
          path: segmentsPath(options.tenant, segmentId),
          query: { workspace_id: options.workspace },
        }),
      );
      output(globals.json, { segment_id: segmentId, deleted: true }, () =>
        printLine(`Deleted segment ${segmentId}`),
      );
    });

  return segments;
}
