import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { DATA_DIR_SNAPSHOT } from '../../store/snapshot.js';
import { componentLog } from '../../telemetry/log.js';
import type { GlobalOptions } from '../admin-client.js';
import { cleaningUpOnFailure } from '../on-failure.js';
import { openContext } from '../open-context.js';
import { closeOnSignals, startServer } from '../serve.js';

interface ServeFlags {
  port?: string;
  host?: string;
  quiet?: boolean;
  ingest: boolean;
  snapshotEvery?: number;
  snapshotPath?: string;
}

function positiveNumber(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0)
    throw new InvalidArgumentError('must be a positive number');
  return number;
}

export function serveCommand(): Command {
  return new Command('serve')
    .description('run the API, the collector and the ingest loop on one port; owns the database')
    .addOption(new Option('--port <port>', 'port (0 picks a free one)').env('CDS_PORT'))
    .addOption(new Option('--host <host>', 'address to listen on').env('CDS_HOST'))
    .option('--quiet', 'no request log')
    .option('--no-ingest', 'do not ingest landing files in this process')
    .option(
      '--snapshot-every <seconds>',
      "rewrite an analysts' snapshot this often",
      positiveNumber,
    )
    .option(
      '--snapshot-path <file>',
      'where --snapshot-every writes (default <data-dir>/snapshot.duckdb)',
    )
    .action(async (options: ServeFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const context = await openContext({
        data_dir: globals.dataDir,
        port: options.port,
        host: options.host,
      });
      const server = await cleaningUpOnFailure(
        startServer(context, {
          logRequests: !options.quiet,
          ingest: options.ingest,
          ...(options.snapshotEvery === undefined
            ? {}
            : {
                snapshot: {
                  path: resolve(
                    options.snapshotPath ?? join(context.dataDir.root, DATA_DIR_SNAPSHOT),
                  ),
                  everyMs: options.snapshotEvery * 1000,
                },
              }),
        }),
        () => context.store.close(),
      );
      // Signals are handled before readiness is announced: a supervisor may stop us at once.
      const closed = closeOnSignals(server);
      // One record of the log, not a line of its own: off a terminal a shipper reading JSON
      // lines meets nothing else; on one it reads as the other records do.
      componentLog('process').info(
        { url: server.url, data_dir: context.dataDir.root },
        `cds listening on ${server.url} (data: ${context.dataDir.root})`,
      );
      await closed;
    });
}
