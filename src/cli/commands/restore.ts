import { Command } from 'commander';
import { ValidationError } from '../../errors.js';
import type { GlobalOptions } from '../admin-request.js';
import { output, printLine } from '../output.js';

export function restoreCommand(): Command {
  return new Command('restore')
    .description('restore a backup written by cds backup into a data dir (--data-dir)')
    .argument('<dir>', 'the backup folder')
    .option('--force', 'replace the database the data dir holds, with its landing lines')
    .action(async (dir: string, options: { force?: boolean }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      if (globals.server) {
        throw ValidationError.field(
          '--server',
          'restore writes a data dir on this machine: stop cds serve, restore, and start it again',
        );
      }
      const { loadConfig } = await import('../../config.js');
      const { restoreBackup } = await import('../../backup/restore.js');
      const config = loadConfig({ data_dir: globals.dataDir });
      const restored = await restoreBackup({
        from: dir,
        dataDir: config.data_dir,
        force: options.force ?? false,
        masterKeyOverride: config.master_key,
      });
      output(globals.json, restored, (value) =>
        printLine(
          `Restored the backup of ${value.manifest.created_at} (cds ${value.manifest.cds_version}, schema ${value.manifest.schema_version}) into ${value.data_dir}${value.key_restored ? ', with its master key' : ''}`,
        ),
      );
    });
}
