import { Command, InvalidArgumentError, Option } from 'commander';
import type { GlobalOptions } from '../admin-request.js';
import { addBusOptions } from '../bus-flags.js';
import type { ShardsFlags, ShardsMoveFlags } from '../shards.js';

function seconds(value: string): number {
  const number = Number(value);
  if (!Number.isFinite(number) || number <= 0)
    throw new InvalidArgumentError('must be a positive number of seconds');
  return number;
}

function withRole(command: Command): Command {
  return addBusOptions(command).addOption(
    new Option('--bus-role <role>', 'whose credentials --bus-creds holds')
      .choices(['admin', 'owner'])
      .default('admin')
      .env('CDS_BUS_ROLE'),
  );
}

export function shardsCommand(): Command {
  const shards = new Command('shards').description(
    'where each tenant of a cluster lives: list, assign and move tenants between shards',
  );
  shards.addCommand(
    withRole(
      new Command('list').description(
        "every assigned tenant with its shard and state, and every shard's owner",
      ),
    ).action(async (flags: ShardsFlags, command: Command) => {
      const { runShardsList } = await import('../shards.js');
      await runShardsList(command.optsWithGlobals<GlobalOptions>(), flags);
    }),
  );
  shards.addCommand(
    withRole(
      new Command('assign')
        .argument('<tenant>')
        .argument('<shard>')
        .description('put a tenant nobody placed yet on a shard (a placed one is moved instead)'),
    ).action(async (tenant: string, shard: string, flags: ShardsFlags, command: Command) => {
      const { runShardsAssign } = await import('../shards.js');
      await runShardsAssign(command.optsWithGlobals<GlobalOptions>(), flags, tenant, shard);
    }),
  );
  shards.addCommand(
    withRole(
      new Command('move')
        .argument('<tenant>')
        .argument('<shard>')
        .description(
          'move a tenant to another shard: the owners copy its rows and switch it while its events wait in the stream; waits until it is active there',
        )
        .option('--timeout <seconds>', 'how long to wait for the move to end', seconds, 600),
    ).action(async (tenant: string, shard: string, flags: ShardsMoveFlags, command: Command) => {
      const { runShardsMove } = await import('../shards.js');
      await runShardsMove(command.optsWithGlobals<GlobalOptions>(), flags, tenant, shard);
    }),
  );
  return shards;
}
