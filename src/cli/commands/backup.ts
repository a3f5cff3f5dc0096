import { join, resolve } from 'node:path';
import { Command } from 'commander';
import type { Manifest } from '../../backup/manifest.js';
import { withAdminClient } from '../admin-client.js';
import type { GlobalOptions } from '../admin-request.js';
import { output, printLine } from '../output.js';

const MIB = 1024 * 1024;

export function backupCommand(): Command {
  return new Command('backup')
    .description(
      'write a consistent, restorable copy of the data dir into a new or empty folder; with --server, while cds serve runs',
    )
    .argument('<dir>', "the folder to write; with --server, a path on the server's machine")
    .option(
      '--with-key',
      'put master.key in the backup too; without it, keep the key elsewhere: restore needs it',
    )
    .addHelpText(
      'after',
      '\nExamples:\n  cds backup /backups/cds-2026-11-25 --server http://127.0.0.1:8080\n  cds restore /backups/cds-2026-11-25 --data-dir ./cds-data\n\nSee docs/backups.md.',
    )
    .action(async (dir: string, options: { withKey?: boolean }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const target = resolve(dir);
      const { localDatabaseBytes } = await import('../local-database.js');
      const { followFile, startProgress, whileFollowing } = await import('../progress.js');
      const progress = startProgress('backup', localDatabaseBytes(globals));
      // The database is the bulk of a backup; with --server it is seen when the folder is local.
      const written = await whileFollowing(
        progress,
        followFile(progress, join(target, 'cds.duckdb')),
        () =>
          withAdminClient(globals, (client) =>
            client<{ dir: string; manifest: Manifest }>({
              method: 'POST',
              path: '/v1/operator/backups',
              body: { dir: target, with_key: options.withKey ?? false },
            }),
          ),
      );
      const bytes = written.manifest.files.reduce((sum, file) => sum + file.bytes, 0);
      const summary = `${written.manifest.files.length} files, ${(bytes / MIB).toFixed(1)} MiB`;
      progress.done(summary);
      output(globals.json, written, (value) => {
        printLine(`Backed up to ${value.dir}: ${summary}`);
        printLine(
          value.manifest.with_key
            ? 'The master key is in the backup: keep the backup as secret as the data dir.'
            : 'The master key is not in the backup: keep master.key (or CDS_MASTER_KEY) safe elsewhere; restore needs it.',
        );
      });
    });
}
