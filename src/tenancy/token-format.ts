import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

export const TOKEN_KINDS = ['tenant', 'workspace', 'collector', 'write_key'] as const;
export type TokenKind = (typeof TOKEN_KINDS)[number];

export const TOKEN_PREFIX: Record<TokenKind, string> = {
  tenant: 'cpt_',
  workspace: 'cpw_',
  collector: 'cpc_',
  /** A browser write key: public, in a site's pages (docs/decisions.md "Browser write keys"). */
  write_key: 'cpk_',
};

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_BYTES = 32;
const SECRET_CHARS = 43;
const CHECKSUM_CHARS = 6;

function base62(value: bigint, width: number): string {
  let out = '';
  let rest = value;
  while (rest > 0n) {
    out = BASE62[Number(rest % 62n)] + out;
    rest /= 62n;
  }
  return out.padStart(width, '0');
}

function checksum(body: string): string {
  return base62(BigInt(crc32(body)), CHECKSUM_CHARS);
}

/** `prefix + 32 random bytes in base62 + 6-char CRC32 checksum` (design §5). */
export function generateToken(kind: TokenKind): string {
  const body =
    TOKEN_PREFIX[kind] +
    base62(BigInt(`0x${randomBytes(SECRET_BYTES).toString('hex')}`), SECRET_CHARS);
  return body + checksum(body);
}

const TOKEN_SHAPE = new RegExp(`^cp[twck]_[0-9A-Za-z]{${SECRET_CHARS + CHECKSUM_CHARS}}$`);

/** Rejects typos and foreign strings without touching the database. */
export function isWellFormedToken(token: string): boolean {
  if (!TOKEN_SHAPE.test(token)) return false;
  const body = token.slice(0, -CHECKSUM_CHARS);
  return checksum(body) === token.slice(-CHECKSUM_CHARS);
}

export function kindOfToken(token: string): TokenKind {
  const prefix = token.slice(0, 4);
  const kind = (Object.keys(TOKEN_PREFIX) as TokenKind[]).find((k) => TOKEN_PREFIX[k] === prefix);
  if (!kind) throw new Error(`not a cds token prefix: ${prefix}`);
  return kind;
}

export interface TokenDigest {
  /** First 16 hex digits of the hash: finds the row. */
  lookup: string;
  /** The whole SHA-256, hex. */
  hash: string;
}

export function digestToken(token: string): TokenDigest {
  const hash = createHash('sha256').update(token).digest('hex');
  return { lookup: hash.slice(0, 16), hash };
}

export function sameDigest(a: string, b: string): boolean {
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

export function newTokenId(): string {
  return `tok_${base62(BigInt(`0x${randomBytes(12).toString('hex')}`), 16)}`;
}
