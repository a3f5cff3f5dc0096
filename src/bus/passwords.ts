import { hash } from 'bcryptjs';
import { ConfigError } from '../errors.js';

/** What `nats server passwd` uses; each connect makes the server pay it once. */
export const DEFAULT_BCRYPT_COST = 11;

/** bcrypt reads no more than 72 bytes: a longer password would match on its first 72 alone. */
const MAX_PASSWORD_BYTES = 72;

/**
 * The bcrypt hash of a bus password, for a node's configuration (`$2b$…`, which nats-server
 * 2.9 compares with bcrypt like `$2a$`). The plain password stays in the process's `--bus-creds`.
 */
export async function hashBusPassword(
  password: string,
  cost = DEFAULT_BCRYPT_COST,
): Promise<string> {
  const bytes = Buffer.byteLength(password, 'utf8');
  if (bytes === 0) throw new ConfigError('password', 'is empty');
  if (bytes > MAX_PASSWORD_BYTES)
    throw new ConfigError(
      'password',
      `is ${bytes} bytes; bcrypt reads only the first ${MAX_PASSWORD_BYTES}, so use a shorter one`,
    );
  return hash(password, cost);
}
