import { Command, Option } from 'commander';
import { ConfigError } from '../../errors.js';
import type { GlobalOptions } from '../admin-request.js';
import type { ImportFlags } from '../import-history.js';

export function importCommand(): Command {
  return new Command('import')
    .description(
      'import history (envelopes or a Segment export) through the checks and the ingest of live events; resumable',
    )
    .argument('<file|dir>', 'an NDJSON file (gzip or not), or a folder of them')
    .addOption(
      new Option('--format <format>', 'what the lines are; auto tells each file by its first lines')
        .choices(['auto', 'envelope', 'segment'])
        .default('auto'),
    )
    .addOption(
      new Option(
        '-t, --tenant <tenant>',
        'tenant the lines go to (required for a Segment export; envelopes must name it)',
      ),
    )
    .addOption(
      new Option(
        '-w, --workspace <workspace>',
        'workspace the lines go to (required for a Segment export; envelopes must name it)',
      ),
    )
    .addHelpText(
      'after',
      `
Envelope lines are landing lines as collectors write them ({"received_at", "source",
"collector_id", "event": {…}}; cds generate-events writes source and event alone) or bare
envelopes (server events); Segment lines are tracking API
calls (track, identify, page, screen, alias, group), as Segment's S3 export or analytics-node's
batches hold them. Folders: every *.ndjson, *.jsonl, *.json and *.gz file, in path order.
cds import needs the store to itself: stop cds serve first. Killed, the same command again
skips what was ingested and goes on.
Examples:
  cds import history.ndjson
  cds import --tenant acme --workspace eu segment-logs/`,
    )
    .action(async (target: string, options: ImportFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      if (globals.server) {
        throw new ConfigError(
          '--server (or CDS_SERVER)',
          'cds import reads files of this machine into the store; stop cds serve and run it without --server',
        );
      }
      if (options.workspace !== undefined && options.tenant === undefined) {
        throw new ConfigError('--workspace', 'names a workspace of a tenant: give --tenant too');
      }
      const { runImport } = await import('../import-history.js');
      await runImport(globals, target, options);
    });
}
