import { resolve } from 'node:path';
import { Command } from 'commander';
import { type GlobalOptions, withAdminClient } from '../admin-client.js';
import { output, printLine } from '../output.js';

export function snapshotCommand(): Command {
  return new Command('snapshot')
    .description(
      'write a consistent read-only copy of the tables analysts query to a new DuckDB file',
    )
    .argument('<out>', 'the file to write, e.g. snapshot.duckdb')
    .option('--replace', 'overwrite an existing file')
    .action(async (out: string, options: { replace?: boolean }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const written = await withAdminClient(globals, (client) =>
        client<{ path: string; rows: Record<string, number> }>({
          method: 'POST',
          path: '/v1/operator/snapshots',
          body: { path: resolve(out), replace: options.replace ?? false },
        }),
      );
      output(globals.json, written, (value) => {
        const counts = Object.entries(value.rows)
          .map(([table, rows]) => `${table} ${rows}`)
          .join(', ');
        printLine(`Wrote ${value.path}: ${counts}`);
      });
    });
}
