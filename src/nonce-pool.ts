import { randomBytes } from 'node:crypto';

/**
 * Random nonces (AES-GCM IVs) drawn from the system CSPRNG in bulk: one draw per nonce cost more
 * than the AES-GCM itself when a batch seals a few hundred thousand identifiers.
 */
export class NoncePool {
  private pool = Buffer.alloc(0);
  private next = 0;

  constructor(
    private readonly bytes: number,
    private readonly perDraw = 4096,
  ) {}

  take(): Buffer {
    if (this.next === this.pool.length) {
      this.pool = randomBytes(this.bytes * this.perDraw);
      this.next = 0;
    }
    const nonce = this.pool.subarray(this.next, this.next + this.bytes);
    this.next += this.bytes;
    return nonce;
  }
}
