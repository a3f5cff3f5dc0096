import {
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { NoncePool } from '../nonce-pool.js';

/**
 * Identifier boxes (docs/cluster-design.md §3, docs/decisions.md "Identifier boxes on the bus"):
 * a collector encrypts the identifiers of each event it publishes to the owners' bus key, so the
 * events stream holds no identifier value; only owners, who hold the master key the bus key is
 * derived from, open them. An ECIES scheme from node:crypto's standard primitives: X25519 between
 * the collector's ephemeral key and the bus key, HKDF-SHA256, then AES-256-GCM per box with a
 * random nonce and the tenant as associated data. The X25519 and HKDF are paid once per
 * collector per epoch (`boxingKeyFor`), so one event costs one AES-GCM.
 *
 * A box is text: `cdsbox1.<bus key id>.<ephemeral public key>.<nonce>.<ciphertext and tag>`, each
 * part base64url, so it is a JSON string that needs no escaping.
 */

const BOX_PREFIX = 'cdsbox1.';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const HKDF_INFO = Buffer.from('cds identifier box v1');
/** DER prefixes of an X25519 key in PKCS#8 and SPKI: the raw 32 bytes follow. */
const PKCS8_X25519 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const SPKI_X25519 = Buffer.from('302a300506032b656e032100', 'hex');
const BUS_KEY_ID = /^bk[0-9a-f]{16}$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;

/** The key collectors box to, as the registry bucket publishes it (no secret in it). */
export interface PublishedBusKey {
  key_id: string;
  /** The X25519 public key, raw 32 bytes, base64url. */
  public_key: string;
  created_at: string;
}

/**
 * What boxing needs, as plain data so a worker thread can be handed it: the text every box of
 * the epoch starts with, and the AES key the collector's ephemeral key and the bus key agreed on.
 */
export interface BoxingKey {
  prefix: string;
  key: Uint8Array;
}

export function isBusKeyId(value: string): boolean {
  return BUS_KEY_ID.test(value);
}

export function newBusKeyId(): string {
  return `bk${randomBytes(8).toString('hex')}`;
}

/** The bus key's private half: derived from the master key by its id, so never stored. */
function privateBusKey(masterKey: Buffer, keyId: string): KeyObject {
  const seed = Buffer.from(hkdfSync('sha256', masterKey, 'cds', `bus-key:${keyId}`, 32));
  return createPrivateKey({
    key: Buffer.concat([PKCS8_X25519, seed]),
    format: 'der',
    type: 'pkcs8',
  });
}

function rawPublicKey(key: KeyObject): Buffer {
  const publicKey = key.type === 'public' ? key : createPublicKey(key);
  return (publicKey.export({ format: 'der', type: 'spki' }) as Buffer).subarray(SPKI_X25519.length);
}

function publicKeyOf(raw: Buffer): KeyObject {
  return createPublicKey({
    key: Buffer.concat([SPKI_X25519, raw]),
    format: 'der',
    type: 'spki',
  });
}

/** The public half of the bus key `keyId` under this master key, as it is published. */
export function busPublicKey(masterKey: Buffer, keyId: string): string {
  return rawPublicKey(privateBusKey(masterKey, keyId)).toString('base64url');
}

function agreedKey(shared: Buffer, ephemeral: Buffer, busKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', shared, Buffer.concat([ephemeral, busKey]), HKDF_INFO, 32));
}

/** A fresh ephemeral key agreed with the published bus key: the collector's key for one epoch. */
export function boxingKeyFor(busKey: PublishedBusKey): BoxingKey {
  if (!isBusKeyId(busKey.key_id)) throw new Error(`not a bus key id: ${busKey.key_id}`);
  const recipient = Buffer.from(busKey.public_key, 'base64url');
  if (recipient.length !== 32) throw new Error('a bus public key is 32 bytes');
  const ephemeral = generateKeyPairSync('x25519');
  const shared = diffieHellman({
    privateKey: ephemeral.privateKey,
    publicKey: publicKeyOf(recipient),
  });
  const ephemeralRaw = rawPublicKey(ephemeral.publicKey);
  return {
    prefix: `${BOX_PREFIX}${busKey.key_id}.${ephemeralRaw.toString('base64url')}.`,
    key: agreedKey(shared, ephemeralRaw, recipient),
  };
}

const nonces = new NoncePool(NONCE_BYTES);

/** `plain` (the identifiers' JSON) boxed for the owners of `tenantId`. */
export function box(boxing: BoxingKey, tenantId: string, plain: string): string {
  const nonce = nonces.take();
  const cipher = createCipheriv('aes-256-gcm', boxing.key, nonce);
  cipher.setAAD(Buffer.from(tenantId, 'utf8'));
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
  return `${boxing.prefix}${nonce.toString('base64url')}.${body.toString('base64url')}`;
}

export function isBox(value: unknown): value is string {
  return typeof value === 'string' && value.startsWith(BOX_PREFIX);
}

/** A box that is no box, or that no key of this master key opens: the event is set aside. */
export class UnopenableBoxError extends Error {
  override readonly name = 'UnopenableBoxError';
}

/** Agreed keys kept per (bus key, ephemeral key); a collector makes one an epoch. */
const MAX_CACHED_KEYS = 4096;

/**
 * The owners' side: opens boxes with the bus keys derived from the master key. Any bus key id
 * opens, so a box made before a rotation opens for as long as the stream keeps it.
 */
export class BoxOpener {
  private readonly privateKeys = new Map<string, { key: KeyObject; raw: Buffer }>();
  private readonly agreed = new Map<string, Buffer>();

  constructor(private readonly masterKey: Buffer) {}

  open(boxed: string, tenantId: string): string {
    const parts = boxed.slice(BOX_PREFIX.length).split('.');
    const [keyId, ephemeral, nonce, body] = parts;
    if (
      parts.length !== 4 ||
      keyId === undefined ||
      !isBusKeyId(keyId) ||
      [ephemeral, nonce, body].some((part) => part === undefined || !BASE64URL.test(part))
    )
      throw new UnopenableBoxError('not an identifier box');
    const sealedBody = Buffer.from(body as string, 'base64url');
    const nonceBytes = Buffer.from(nonce as string, 'base64url');
    if (nonceBytes.length !== NONCE_BYTES || sealedBody.length < TAG_BYTES)
      throw new UnopenableBoxError('not an identifier box');
    const decipher = createDecipheriv(
      'aes-256-gcm',
      this.agreedKey(keyId, ephemeral as string),
      nonceBytes,
    );
    decipher.setAAD(Buffer.from(tenantId, 'utf8'));
    decipher.setAuthTag(sealedBody.subarray(sealedBody.length - TAG_BYTES));
    try {
      return Buffer.concat([
        decipher.update(sealedBody.subarray(0, sealedBody.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new UnopenableBoxError(
        `the identifier box of bus key ${keyId} does not open for this tenant with this master key`,
      );
    }
  }

  private agreedKey(keyId: string, ephemeral: string): Buffer {
    const cacheKey = `${keyId}.${ephemeral}`;
    let key = this.agreed.get(cacheKey);
    if (key) return key;
    const ephemeralRaw = Buffer.from(ephemeral, 'base64url');
    if (ephemeralRaw.length !== 32) throw new UnopenableBoxError('not an identifier box');
    const own = this.privateKey(keyId);
    let shared: Buffer;
    try {
      shared = diffieHellman({ privateKey: own.key, publicKey: publicKeyOf(ephemeralRaw) });
    } catch {
      throw new UnopenableBoxError('not an identifier box');
    }
    key = agreedKey(shared, ephemeralRaw, own.raw);
    if (this.agreed.size >= MAX_CACHED_KEYS) this.agreed.clear();
    this.agreed.set(cacheKey, key);
    return key;
  }

  private privateKey(keyId: string): { key: KeyObject; raw: Buffer } {
    let own = this.privateKeys.get(keyId);
    if (!own) {
      const key = privateBusKey(this.masterKey, keyId);
      own = { key, raw: rawPublicKey(key) };
      this.privateKeys.set(keyId, own);
    }
    return own;
  }
}
