import { resolve } from 'node:path';
import { Command } from 'commander';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
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
      const path = resolve(out);
      const { localDatabaseBytes } = await import('../local-database.js');
      const { followFile, rowCounts, startProgress, whileFollowing } = await import(
        '../progress.js'
      );
      // The snapshot holds some tables only: the database's size is an upper bound.
      const progress = startProgress('snapshot', localDatabaseBytes(globals));
      // Written beside its name and renamed into place (`copySnapshot`).
      const written = await whileFollowing(progress, followFile(progress, `${path}.partial`), () =>
        withAdminClient(globals, (client) =>
          client<{ path: string; rows: Record<string, number> }>({
            method: 'POST',
            path: '/v1/operator/snapshots',
            body: { path, replace: options.replace ?? false },
          }),
        ),
      );
      const counts = rowCounts(written.rows);
      progress.done(counts);
      output(globals.json, written, (value) => printLine(`Wrote ${value.path}: ${counts}`));
    });
}
