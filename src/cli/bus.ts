import { connectBus } from '../bus/connect.js';
import { initBus } from '../bus/setup.js';
import { loadConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import type { GlobalOptions } from './admin-request.js';
import { type BusFlags, busConfigInput, busSettingsOf } from './bus-flags.js';
import { output, printLine } from './output.js';

export interface BusInitFlags extends BusFlags {
  replicas: number;
  maxAgeHours: number;
  maxBytes: number;
}

/** `cds bus init`: the stream and buckets, made once by the admin; running it again resizes the stream. */
export async function runBusInit(globals: GlobalOptions, flags: BusInitFlags): Promise<void> {
  const config = loadConfig({ data_dir: globals.dataDir, ...busConfigInput(flags) });
  const settings = busSettingsOf(config);
  if (!settings) throw new ConfigError('--bus', 'is required: the NATS servers of the cluster');
  const bus = await connectBus(settings, 'admin');
  try {
    const result = await initBus(bus, {
      replicas: flags.replicas,
      maxAgeMs: flags.maxAgeHours * 3600 * 1000,
      maxBytes: flags.maxBytes,
    }).catch((error: Error) => {
      if (!/Permissions Violation/.test(error.message)) throw error;
      throw new ConfigError(
        '--bus-creds',
        `the bus refused these credentials (${error.message}): cds bus init needs the admin's`,
      );
    });
    output(globals.json, result, (value) =>
      printLine(`stream CDS_EVENTS ${value.stream}; buckets ${value.buckets.join(', ')}`),
    );
  } finally {
    await bus.close();
  }
}
