import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { rotateBusKey } from '../bus/bus-key.js';
import { connectBus } from '../bus/connect.js';
import { streamMaxAgeMs } from '../bus/setup.js';
import { loadConfig } from '../config.js';
import { ConfigError, ValidationError } from '../errors.js';
import { parseMasterKey } from '../store/data-dir.js';
import type { GlobalOptions } from './admin-request.js';
import { type BusFlags, busConfigInput, busSettingsOf } from './bus-flags.js';
import { output, printLine } from './output.js';

export interface RotatedBusKey {
  key_id: string;
  public_key: string;
  created_at: string;
  previous_key_id: string | null;
  /** When the last message boxed to the previous key leaves the stream; null if it never does. */
  previous_key_needed_until: string | null;
}

/** The master key as given, or an owner data dir's file; never a new one, nor a new data dir. */
function clusterMasterKey(dataDir: string, setting: string | undefined): Buffer {
  if (setting !== undefined) return parseMasterKey(setting, 'CDS_MASTER_KEY');
  const keyFile = join(dataDir, 'master.key');
  try {
    return parseMasterKey(readFileSync(keyFile).toString('hex'), keyFile);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    throw ValidationError.field(
      'master.key',
      `${keyFile} does not exist: point --data-dir at an owner's data dir, or give the cluster's CDS_MASTER_KEY`,
    );
  }
}

/**
 * `cds bus rotate-key`: publishes a new bus key, derived from the cluster's master key, in the
 * registry bucket; collectors box to it within seconds. Owners derive every key's private half
 * from the master key, so boxes of the old key open until the stream drops them.
 */
export async function runBusRotateKey(globals: GlobalOptions, flags: BusFlags): Promise<void> {
  const config = loadConfig({ data_dir: globals.dataDir, ...busConfigInput(flags) });
  const settings = busSettingsOf(config);
  if (!settings) throw new ConfigError('--bus', 'is required: the NATS servers of the cluster');
  const masterKey = clusterMasterKey(config.data_dir, config.master_key);
  const bus = await connectBus(settings, 'owner');
  try {
    const now = new Date();
    const { current, previous } = await rotateBusKey(bus, masterKey, now.toISOString());
    const maxAgeMs = await streamMaxAgeMs(bus);
    const result: RotatedBusKey = {
      ...current,
      previous_key_id: previous?.key_id ?? null,
      previous_key_needed_until:
        previous === null || maxAgeMs === 0
          ? null
          : new Date(now.getTime() + maxAgeMs).toISOString(),
    };
    output(globals.json, result, (value) => {
      printLine(`collectors now box identifiers to bus key ${value.key_id}`);
      if (value.previous_key_id !== null)
        printLine(
          `boxes of ${value.previous_key_id} open until the stream drops them${value.previous_key_needed_until ? `, by ${value.previous_key_needed_until}` : ''}: keep this master key`,
        );
    });
  } finally {
    await bus.close();
  }
}
