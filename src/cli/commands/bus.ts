import { Command, InvalidArgumentError, Option } from 'commander';
import type { GlobalOptions } from '../admin-request.js';
import type { BusInitFlags } from '../bus.js';
import type { BusConfigFlags } from '../bus-config.js';
import { addBusOptions, type BusFlags } from '../bus-flags.js';
import type { BusPasswdFlags } from '../bus-passwd.js';
import type { BusStepDownFlags } from '../bus-step-down.js';

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
    .addCommand(rotateKey)
    .addCommand(configCommand())
    .addCommand(passwdCommand())
    .addCommand(stepDownCommand());
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

function configCommand(): Command {
  return new Command('config')
    .description(
      "print each nats-server node's configuration for a closed bus: routes, the role users, TLS",
    )
    .requiredOption(
      '--node <host[:client:cluster:monitor]>',
      'a node, once per node in order (n1, n2, …); ports default to 4222:6222:8222',
      collect,
      [],
    )
    .requiredOption('--collector-hash <bcrypt>', "the collector's password hash (cds bus passwd)")
    .requiredOption('--owner-hash <bcrypt>', "the owners' password hash")
    .requiredOption('--admin-hash <bcrypt>', "the admin's password hash")
    .option(
      '--route-creds <file>',
      'the routes\' {"user","password"} JSON, the same for every node; unset, a new random password',
    )
    .option(
      '--listen <addr>',
      "the address the client and route ports bind; unset, each node's host",
    )
    .option('--monitor-host <addr>', 'the address the monitoring port binds; unset, as --listen')
    .option(
      '--store-dir <dir>',
      "JetStream's folder on the nodes; each node's is <dir>/<name>",
      '/var/lib/nats',
    )
    .option(
      '--max-file-store <size>',
      'the most JetStream keeps on each node (see docs/scaling.md)',
      '64GB',
    )
    .option('--tls-ca <file>', "the CA's certificate on the nodes: clients and routes speak TLS")
    .option('--tls-cert <file>', "the node's certificate on the nodes (server and client use)")
    .option('--tls-key <file>', "the node's key on the nodes")
    .option('--tls-verify', 'clients must present a certificate the CA signed (--bus-cert)')
    .option('--out-dir <dir>', 'write <dir>/<name>.conf (mode 0600) instead of printing them')
    .addHelpText(
      'after',
      `
Example:
  cds bus config --node n1.internal --node n2.internal --node n3.internal \\
    --collector-hash "$(cat collector.hash)" --owner-hash "$(cat owner.hash)" \\
    --admin-hash "$(cat admin.hash)" --route-creds route.json --listen 0.0.0.0 \\
    --tls-ca /etc/nats/ca.pem --tls-cert /etc/nats/node.pem --tls-key /etc/nats/node-key.pem \\
    --out-dir nats-configs`,
    )
    .action(async (flags: BusConfigFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const { runBusConfig } = await import('../bus-config.js');
      await runBusConfig(globals, flags);
    });
}

function passwdCommand(): Command {
  return new Command('passwd')
    .description(
      "print the bcrypt hash of a password read from stdin, for cds bus config's --*-hash",
    )
    .addOption(
      new Option('--cost <n>', 'bcrypt cost: each client connect makes the server pay it')
        .argParser(positiveInteger)
        .default(11),
    )
    .addHelpText('after', '\nExample:\n  printf %s "$PASSWORD" | cds bus passwd > collector.hash')
    .action(async (flags: BusPasswdFlags, command: Command) => {
      const globals = command.optsWithGlobals<GlobalOptions>();
      const { runBusPasswd } = await import('../bus-passwd.js');
      await runBusPasswd(globals, flags);
    });
}

function stepDownCommand(): Command {
  return addBusOptions(
    new Command('step-down')
      .description(
        "move the events stream's leadership to another node (admin credentials), before stopping its node",
      )
      .option('--timeout-seconds <n>', 'how long to wait for the new leader', positiveInteger, 30),
  ).action(async (flags: BusStepDownFlags, command: Command) => {
    const globals = command.optsWithGlobals<GlobalOptions>();
    const { runBusStepDown } = await import('../bus-step-down.js');
    await runBusStepDown(globals, flags);
  });
}
