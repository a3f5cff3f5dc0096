import { connectBus } from '../bus/connect.js';
import { stepDownStreamLeader } from '../bus/leader.js';
import { loadConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import type { GlobalOptions } from './admin-request.js';
import { type BusFlags, busConfigInput, busSettingsOf } from './bus-flags.js';
import { output, printLine } from './output.js';

export interface BusStepDownFlags extends BusFlags {
  timeoutSeconds: number;
}

/** `cds bus step-down`: moves the events stream's leadership off its node, as the admin. */
export async function runBusStepDown(
  globals: GlobalOptions,
  flags: BusStepDownFlags,
): Promise<void> {
  const config = loadConfig({ data_dir: globals.dataDir, ...busConfigInput(flags) });
  const settings = busSettingsOf(config);
  if (!settings) throw new ConfigError('--bus', 'is required: the NATS servers of the cluster');
  const bus = await connectBus(settings, 'admin');
  try {
    const result = await stepDownStreamLeader(bus, flags.timeoutSeconds * 1000).catch(
      (error: Error) => {
        if (!/Permissions Violation/.test(error.message)) throw error;
        throw new ConfigError(
          '--bus-creds',
          `the bus refused these credentials (${error.message}): cds bus step-down needs the admin's`,
        );
      },
    );
    output(globals.json, result, (value) =>
      printLine(`${value.stream}: leader ${value.from} stepped down, ${value.to} leads now`),
    );
  } finally {
    await bus.close();
  }
}
