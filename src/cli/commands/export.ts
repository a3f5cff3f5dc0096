import { resolve } from 'node:path';
import { Command, Option } from 'commander';
import { EXPORT_FORMATS, type ExportResult } from '../../store/parquet-export.js';
import { type GlobalOptions, withAdminClient } from '../admin-client.js';
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
      const written = await withAdminClient(globals, (client) =>
        client<ExportResult>({
          method: 'POST',
          path: '/v1/operator/exports',
          body: { dir: resolve(dir), format: options.format },
        }),
      );
      output(globals.json, written, (value) => {
        const counts = Object.entries(value.rows)
          .map(([table, rows]) => `${table} ${rows}`)
          .join(', ');
        printLine(`Wrote ${value.dir} (${value.format}): ${counts}`);
      });
    });
}
