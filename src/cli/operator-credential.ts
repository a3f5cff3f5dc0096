import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../config.js';
import { ValidationError } from '../errors.js';
import { openDataDir } from '../store/data-dir.js';
import { operatorToken } from '../tenancy/operator.js';

export interface OperatorCredential {
  token: string;
  /** Where the master key it derives from was read: the setting, or the data dir's file. */
  derivedFrom: string;
}

function masterKeySource(dataDir: string, setting: string | undefined): string {
  if (setting === undefined) return join(dataDir, 'master.key');
  return process.env.CDS_MASTER_KEY
    ? 'CDS_MASTER_KEY'
    : `master_key in ${join(dataDir, 'cds.config.json')}`;
}

/**
 * The operator credential of the data dir the CLI is pointed at, derived from its master key.
 * A data dir without a key is refused, not given one: a token printed for a key made just now,
 * in a mistyped folder, would fail wherever it is used. `otherwise` names another way, if any.
 */
export function printableOperatorCredential(
  dataDir: string | undefined,
  otherwise = '',
): OperatorCredential {
  const config = loadConfig({ data_dir: dataDir });
  const derivedFrom = masterKeySource(config.data_dir, config.master_key);
  if (config.master_key === undefined && !existsSync(derivedFrom)) {
    throw ValidationError.field(
      'master.key',
      `${derivedFrom} does not exist: point --data-dir (or CDS_DATA_DIR) at the data dir cds serve uses, or give its CDS_MASTER_KEY${otherwise}`,
    );
  }
  const { masterKey } = openDataDir(config.data_dir, config.master_key);
  return { token: operatorToken(masterKey), derivedFrom };
}

/** The operator token of a data dir, for `--server` without `--token`; refused as above. */
export function operatorTokenOfDataDir(dataDir: string | undefined): string {
  return printableOperatorCredential(dataDir, ', or pass a token with --token').token;
}
