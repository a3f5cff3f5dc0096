import { type Command, Option } from 'commander';
import type { BusSettings } from '../bus/connect.js';
import type { Config } from '../config.js';

/** The flags that put a command on the bus (cluster mode, docs/scaling.md). */
export interface BusFlags {
  bus?: string;
  busCreds?: string;
  busCa?: string;
  busCert?: string;
  busKey?: string;
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
    )
    .addOption(
      new Option(
        '--bus-ca <file>',
        "the PEM certificate of the CA that signed the NATS nodes' certificates (a private CA)",
      ).env('CDS_BUS_CA'),
    )
    .addOption(
      new Option(
        '--bus-cert <file>',
        'the PEM client certificate this process presents to nodes that verify clients',
      ).env('CDS_BUS_CERT'),
    )
    .addOption(
      new Option('--bus-key <file>', "the PEM key of --bus-cert's certificate").env('CDS_BUS_KEY'),
    );
}

/** The flags as configuration keys, so `cds.config.json` may hold them too. */
export function busConfigInput(flags: BusFlags): {
  bus?: string;
  bus_creds?: string;
  bus_ca?: string;
  bus_cert?: string;
  bus_key?: string;
} {
  return {
    bus: flags.bus,
    bus_creds: flags.busCreds,
    bus_ca: flags.busCa,
    bus_cert: flags.busCert,
    bus_key: flags.busKey,
  };
}

/** The bus the configuration names, or null for the embedded default. */
export function busSettingsOf(
  config: Pick<Config, 'bus' | 'bus_creds' | 'bus_ca' | 'bus_cert' | 'bus_key'>,
): BusSettings | null {
  return config.bus
    ? {
        servers: config.bus,
        credsPath: config.bus_creds,
        caPath: config.bus_ca,
        certPath: config.bus_cert,
        keyPath: config.bus_key,
      }
    : null;
}
