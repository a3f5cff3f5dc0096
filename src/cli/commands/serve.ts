import { Command, Option } from 'commander';
import type { GlobalOptions } from '../admin-client.js';
import { openContext } from '../open-context.js';
import { closeOnSignals, startServer } from '../serve.js';

export function serveCommand(): Command {
  return new Command('serve')
    .description('run the HTTP API; this process owns the database')
    .addOption(
      new Option('--port <port>', 'port to listen on (0 picks a free one)').env('CDS_PORT'),
    )
    .addOption(new Option('--host <host>', 'address to listen on').env('CDS_HOST'))
    .option('--quiet', 'no request log')
    .action(
      async (options: { port?: string; host?: string; quiet?: boolean }, command: Command) => {
        const globals = command.optsWithGlobals<GlobalOptions>();
        const context = await openContext({
          data_dir: globals.dataDir,
          port: options.port,
          host: options.host,
        });
        const server = await startServer(context, !options.quiet);
        process.stdout.write(`cds listening on ${server.url} (data: ${context.dataDir.root})\n`);
        await closeOnSignals(server);
      },
    );
}
