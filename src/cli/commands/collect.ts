import { Command, Option } from 'commander';
import type { GlobalOptions } from '../admin-request.js';
import { addBusOptions } from '../bus-flags.js';
import type { CollectFlags } from '../collect.js';

export function collectCommand(): Command {
  return addBusOptions(
    new Command('collect')
      .description(
        'run a collector only: accept events into landing files (or, with --bus, the events stream) without opening the database',
      )
      .addOption(new Option('--port <port>', 'port (0 picks a free one)').env('CDS_PORT'))
      .addOption(new Option('--host <host>', 'address to listen on').env('CDS_HOST')),
  ).action(async (options: CollectFlags, command: Command) => {
    const globals = command.optsWithGlobals<GlobalOptions>();
    const { runCollector } = await import('../collect.js');
    await runCollector(globals, options);
  });
}
