import { type Command, Option } from 'commander';
import type { BusSettings } from '../bus/connect.js';
import type { Config } from '../config.js';

/** The flags that put a command on the bus (cluster mode, docs/scaling.md). */
export interface BusFlags {
  bus?: string;
  busCreds?: string;
}

export function addBusOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--bus <urls>',
        'cluster mode: the NATS servers of the bus, nats://host:port[,…]',
      ).env('CDS_BUS'),
    )
    .addOption(
      new Option(
        '--bus-creds <file>',
        'the bus credentials of this process: {"user","password"} JSON or an nkey seed',
      ).env('CDS_BUS_CREDS'),
    );
}

/** The flags as configuration keys, so `cds.config.json` may hold them too. */
export function busConfigInput(flags: BusFlags): { bus?: string; bus_creds?: string } {
  return { bus: flags.bus, bus_creds: flags.busCreds };
}

/** The bus the configuration names, or null for the embedded default. */
export function busSettingsOf(config: Pick<Config, 'bus' | 'bus_creds'>): BusSettings | null {
  return config.bus ? { servers: config.bus, credsPath: config.bus_creds } : null;
}
