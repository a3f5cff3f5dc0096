import { Command, CommanderError, Option } from 'commander';
import { AppError, ConfigError } from '../errors.js';
import { PRIVATE_UMASK } from '../store/file-modes.js';
import { checkLogLevel, componentLog } from '../telemetry/log.js';
import { packageVersion } from '../version.js';
import { backupCommand } from './commands/backup.js';
import { busCommand } from './commands/bus.js';
import { collectCommand } from './commands/collect.js';
import { demoCommand } from './commands/demo.js';
import { eraseCommand } from './commands/erase.js';
import { erasuresCommand } from './commands/erasures.js';
import { exportCommand } from './commands/export.js';
import { generateEventsCommand } from './commands/generate-events.js';
import { importCommand } from './commands/import.js';
import { ingestCommand } from './commands/ingest.js';
import { metricsCommand } from './commands/metrics.js';
import { profilesCommand } from './commands/profiles.js';
import { restoreCommand } from './commands/restore.js';
import { segmentsCommand } from './commands/segments.js';
import { serveCommand } from './commands/serve.js';
import { shardsCommand } from './commands/shards.js';
import { snapshotCommand } from './commands/snapshot.js';
import { tenantsCommand } from './commands/tenants.js';
import { tokensCommand } from './commands/tokens.js';
import { webhooksCommand } from './commands/webhooks.js';
import { escapeControls, printErrorLine } from './output.js';

export function createCLI(): Command {
  return new Command('cds')
    .version(packageVersion(), '-V, --version', 'print the version of cds')
    .description('cds: customer events to profiles, metrics and segments, over one DuckDB file')
    .addOption(
      new Option('-d, --data-dir <dir>', 'data directory (default ./cds-data)').env('CDS_DATA_DIR'),
    )
    .addOption(
      new Option(
        '--server <url>',
        'send admin commands to a running cds serve instead of opening the file',
      ).env('CDS_SERVER'),
    )
    .addOption(
      new Option(
        '--token <token>',
        'token for --server (default: operator, from the local master key)',
      ).env('CDS_TOKEN'),
    )
    .option('--json', 'print machine-readable JSON')
    .showHelpAfterError()
    .addCommand(serveCommand())
    .addCommand(ingestCommand())
    .addCommand(importCommand())
    .addCommand(collectCommand())
    .addCommand(tenantsCommand())
    .addCommand(tokensCommand())
    .addCommand(segmentsCommand())
    .addCommand(metricsCommand())
    .addCommand(profilesCommand())
    .addCommand(webhooksCommand())
    .addCommand(eraseCommand())
    .addCommand(erasuresCommand())
    .addCommand(snapshotCommand())
    .addCommand(exportCommand())
    .addCommand(backupCommand())
    .addCommand(restoreCommand())
    .addCommand(busCommand())
    .addCommand(shardsCommand())
    .addCommand(demoCommand())
    .addCommand(generateEventsCommand());
}

/**
 * Commander's own errors quote the arguments given (`unknown option '--x…'`); their controls are
 * escaped like everything else the CLI prints, line by line, as commander's text spans lines.
 */
function escapedError(text: string, write: (text: string) => void): void {
  write(text.split('\n').map(escapeControls).join('\n'));
}

/** Throws instead of exiting, escapes errors; commander copies settings only to `.command()` ones. */
function prepareCommands(command: Command): Command {
  command.exitOverride();
  command.configureOutput({ outputError: escapedError });
  for (const sub of command.commands) prepareCommands(sub);
  return command;
}

/**
 * A reader that leaves early (`cds generate-events | head`) ends the command the way SIGPIPE ends
 * a Unix tool: quietly, instead of with a stack trace from the next write.
 */
function exitWhenOutputCloses(): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    process.exit();
  });
}

/** Node's own warnings (deprecations, listeners) go to the one log too, not as plain lines. */
function logProcessWarnings(): void {
  process.removeAllListeners('warning');
  process.on('warning', (warning: Error & { code?: string }) => {
    componentLog('process').warn({ warning: warning.name, code: warning.code }, warning.message);
  });
}

/** Exit codes: 0 done, 1 refused or failed (the message says why), 2 bad usage. */
export async function runCLI(argv: string[]): Promise<void> {
  // Before any file is made: DuckDB creates its own (database, WAL, snapshots) with the umask.
  process.umask(PRIVATE_UMASK);
  exitWhenOutputCloses();
  logProcessWarnings();
  const program = prepareCommands(createCLI());
  try {
    checkLogLevel();
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode === 0 ? 0 : 2;
      return;
    }
    if (error instanceof ConfigError) {
      printErrorLine(`cds: ${error.message}`);
      process.exitCode = 2;
      return;
    }
    if (error instanceof AppError) {
      printErrorLine(`cds: ${error.message}`);
      if (Array.isArray(error.details) && error.details.length > 1) {
        for (const issue of error.details) printErrorLine(`  ${issue.path}: ${issue.message}`);
      }
      process.exitCode = 1;
      return;
    }
    throw error;
  }
}
