import { createHmac, timingSafeEqual } from 'node:crypto';

const OPERATOR_PREFIX = 'cpo_';

/**
 * The operator's credential is derived from the master key and never stored: whoever can read
 * `master.key` already holds every secret of the data directory, so the CLI beside it may act as
 * operator, in-process or against a running server (`--server`).
 */
export function operatorToken(masterKey: Buffer): string {
  return (
    OPERATOR_PREFIX +
    createHmac('sha256', masterKey).update('cds operator token v1').digest('base64url')
  );
}

export function isOperatorToken(masterKey: Buffer, presented: string): boolean {
  if (!presented.startsWith(OPERATOR_PREFIX)) return false;
  const expected = Buffer.from(operatorToken(masterKey));
  const given = Buffer.from(presented);
  return expected.length === given.length && timingSafeEqual(expected, given);
}
