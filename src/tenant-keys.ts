import { createCipheriv, createDecipheriv, createHmac, hkdfSync } from 'node:crypto';
import { NoncePool } from './nonce-pool.js';

const IV_BYTES = 12;
const TAG_BYTES = 16;
/** SHA-256's block size: a 32-byte key is zero-padded to it. */
const HMAC_BLOCK_BYTES = 64;

const ivs = new NoncePool(IV_BYTES);

/**
 * The two secrets of one tenant, derived from the master key with HKDF (design §10): one keys
 * identifier look-ups (HMAC), the other encrypts identifier values (AES-256-GCM).
 */
export class TenantKeys {
  private readonly lookupKey: Buffer;
  private readonly encryptionKey: Buffer;

  constructor(masterKey: Buffer, tenantId: string) {
    const derive = (purpose: string) =>
      Buffer.from(
        hkdfSync(
          'sha256',
          masterKey,
          Buffer.from('cds'),
          Buffer.from(`${purpose}:${tenantId}`),
          32,
        ),
      );
    this.lookupKey = derive('identifier-lookup');
    this.encryptionKey = derive('identifier-encryption');
  }

  /** `HMAC-SHA256(tenant key, type ":" normalised)`, base64url: the opaque identifier key. */
  identifierKey(type: string, normalized: string): string {
    return createHmac('sha256', this.lookupKey).update(`${type}:${normalized}`).digest('base64url');
  }

  /**
   * The HMAC pads of the look-up key (RFC 2104), for ingest to key a batch's identifiers in SQL
   * exactly as `identifierKey` does.
   */
  lookupPads(): { inner: Buffer; outer: Buffer } {
    const block = Buffer.alloc(HMAC_BLOCK_BYTES);
    this.lookupKey.copy(block);
    return {
      inner: Buffer.from(block.map((byte) => byte ^ 0x36)),
      outer: Buffer.from(block.map((byte) => byte ^ 0x5c)),
    };
  }

  /** `iv || tag || ciphertext`. */
  encrypt(plain: string): Buffer {
    const iv = ivs.take();
    const cipher = createCipheriv('aes-256-gcm', this.encryptionKey, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return Buffer.concat([iv, cipher.getAuthTag(), body]);
  }

  decrypt(sealed: Uint8Array): string {
    const buffer = Buffer.from(sealed);
    const decipher = createDecipheriv(
      'aes-256-gcm',
      this.encryptionKey,
      buffer.subarray(0, IV_BYTES),
    );
    decipher.setAuthTag(buffer.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([
      decipher.update(buffer.subarray(IV_BYTES + TAG_BYTES)),
      decipher.final(),
    ]).toString('utf8');
  }
}

/** One TenantKeys per tenant for the life of the process; HKDF is not free. */
export class KeyRing {
  private readonly tenants = new Map<string, TenantKeys>();

  constructor(private readonly masterKey: Buffer) {}

  forTenant(tenantId: string): TenantKeys {
    let keys = this.tenants.get(tenantId);
    if (!keys) {
      keys = new TenantKeys(this.masterKey, tenantId);
      this.tenants.set(tenantId, keys);
    }
    return keys;
  }
}
