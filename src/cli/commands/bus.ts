import { Command, InvalidArgumentError } from 'commander';
import type { GlobalOptions } from '../admin-request.js';
import type { BusInitFlags } from '../bus.js';
import { addBusOptions, type BusFlags } from '../bus-flags.js';

function positiveInteger(value: string): number {
  const number = Number(value);
  if (!Number.isInteger(number) || number <= 0)
    throw new InvalidArgumentError('must be a positive integer');
  return number;
}

function size(value: string): number {
  if (value === '-1') return -1;
  const match = /^(\d+)(B|KB|MB|GB|TB)?$/i.exec(value);
  if (!match) throw new InvalidArgumentError('must be a size such as 500MB or 60GB, or -1');
  const unit = (match[2] ?? 'B').toUpperCase();
  const factor = { B: 1, KB: 1e3, MB: 1e6, GB: 1e9, TB: 1e12 }[unit] ?? 1;
  return Number(match[1]) * factor;
}

export function busCommand(): Command {
  const init = addBusOptions(
    new Command('init')
      .description(
        'create the events stream and the buckets of a cluster (admin credentials), or resize the stream',
      )
      .option(
        '--replicas <n>',
        'copies of each event, one per node (3 on three nodes)',
        positiveInteger,
        3,
      )
      .option(
        '--max-age-hours <hours>',
        'how long the stream keeps events: at least the backup interval plus a restore',
        positiveInteger,
        // DEFAULT_MAX_AGE_HOURS of bus/setup.ts, which is not loaded before a bus command runs.
        48,
      )
      .option(
        '--max-bytes <size>',
        'the most each node keeps, oldest dropped first; -1 for no limit',
        size,
        -1,
      ),
  ).action(async (flags: BusInitFlags, command: Command) => {
    const globals = command.optsWithGlobals<GlobalOptions>();
    const { runBusInit } = await import('../bus.js');
    await runBusInit(globals, flags);
  });
  const rotateKey = addBusOptions(
    new Command('rotate-key').description(
      "make a new bus key the one collectors box identifiers to (owner credentials, and the cluster's master key: --data-dir of an owner or CDS_MASTER_KEY); boxes of the old key still open until the stream drops them",
    ),
  ).action(async (flags: BusFlags, command: Command) => {
    const globals = command.optsWithGlobals<GlobalOptions>();
    const { runBusRotateKey } = await import('../bus-key.js');
    await runBusRotateKey(globals, flags);
  });
  return new Command('bus')
    .description('the NATS JetStream bus of a cluster')
    .addCommand(init)
    .addCommand(rotateKey);
}
