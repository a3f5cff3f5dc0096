import { dirname, resolve } from 'node:path';
import { Command, Option } from 'commander';
import {
  EXPORT_FORMATS,
  EXPORT_PARTIAL_PREFIX,
  type ExportResult,
} from '../../store/parquet-export.js';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { output, printLine } from '../output.js';

export function exportCommand(): Command {
  return new Command('export')
    .description("write the analysts' tables (those of cds snapshot) to a new folder as Parquet")
    .argument('<dir>', 'a new or empty folder, e.g. export/')
    .addOption(
      new Option('--format <format>', 'file format')
        .choices(EXPORT_FORMATS)
        .default('parquet' as const),
    )
    .addHelpText(
      'after',
      `
One file per table; events in events/tenant_id=<t>/workspace_id=<w>/date=<YYYY-MM-DD>/.
Example:
  cds export --format parquet ./export
  duckdb -c "FROM read_parquet('export/events/**/*.parquet', hive_partitioning = true)"`,
    )
    .action(async (dir: string, options: { format: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const target = resolve(dir);
      const { followFolders, rowCounts, startProgress, whileFollowing } = await import(
        '../progress.js'
      );
      // Parquet is compressed: no size is known before, so the line shows bytes written and rate.
      const progress = startProgress('export', null);
      // Written into a private folder beside the target and renamed into place (parquet-export.ts).
      const written = await whileFollowing(
        progress,
        followFolders(progress, dirname(target), EXPORT_PARTIAL_PREFIX),
        () =>
          withAdminClient(globals, (client) =>
            client<ExportResult>({
              method: 'POST',
              path: '/v1/operator/exports',
              body: { dir: target, format: options.format },
            }),
          ),
      );
      const counts = rowCounts(written.rows);
      progress.done(counts);
      output(globals.json, written, (value) =>
        printLine(`Wrote ${value.dir} (${value.format}): ${counts}`),
      );
    });
}
