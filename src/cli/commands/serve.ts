import { Command, InvalidArgumentError, Option } from 'commander';
import type { GlobalOptions } from '../admin-request.js';
import { addBusOptions } from '../bus-flags.js';
import type { ServeFlags } from '../serve.js';

function positiveNumber(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0)
    throw new InvalidArgumentError('must be a positive number');
  return number;
}

export function serveCommand(): Command {
  const command = new Command('serve')
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
    .addOption(
      new Option('--shard <name>', 'cluster mode: the shard this process owns').env('CDS_SHARD'),
    )
    .addOption(
      new Option(
        '--advertise-url <url>',
        'cluster mode: the URL other owners reach this one at (default: the address listened on)',
      ).env('CDS_ADVERTISE_URL'),
    );
  return addBusOptions(command).action(async (options: ServeFlags, command: Command) => {
    const globals = command.optsWithGlobals<GlobalOptions>();
    const { runServe } = await import('../serve.js');
    await runServe(globals, options);
  });
}
