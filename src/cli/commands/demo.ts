import { Command, Option } from 'commander';
import type { GlobalOptions } from '../admin-request.js';

export function demoCommand(): Command {
  return new Command('demo')
    .description('create a demo data dir (default ./cds-demo), set up a demo tenant and serve it')
    .addOption(
      new Option('--port <port>', 'port to listen on (0 picks a free one)').env('CDS_PORT'),
    )
    .action(async (options: { port?: string }, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const { runDemo } = await import('../demo.js');
      await runDemo(globals, options);
    });
}
