const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Fixed for ever: changing it would give every retried message a new id, so a second copy. */
const NAMESPACE = '4b2365d0-1c06-4090-a9be-e7d1d7f1d508';

const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** The four bytes of a 32-bit lane as hex, most significant first. */
function hex32(lane: number): string {
  return `${HEX[(lane >>> 24) & 0xff]}${HEX[(lane >>> 16) & 0xff]}${HEX[(lane >>> 8) & 0xff]}${HEX[lane & 0xff]}`;
}

/**
 * The envelope ids of one workspace's Segment messages (docs/decisions.md "Segment-spec
 * tracking API"): a `messageId` that is a UUID is the id; any other (analytics-node's
 * `node-next-1668208232027-743be593-…`) becomes a name-based UUID (RFC 9562 version 8) hashed
 * from a fixed namespace, the tenant, the workspace and the messageId, so a retried message
 * keeps its id and is stored once.
 *
 * The hash is cyrb128, 128 bits, not SHA-256: SHA-256 took a fifth of the time a Segment batch
 * takes to check (its call into C++ costs more than hashing 60 characters in JavaScript). The
 * id needs no secrecy: it only has to be stable and well spread. A name that could be chosen to
 * collide gains nothing a sender could not do by sending that id itself.
 */
export class MessageIds {
  /** cyrb128's lanes (github.com/bryc/code, public domain) after the namespace, tenant and workspace. */
  private readonly prefix = new Int32Array([1779033703, 3144134277, 1013904242, 2773480762]);
  /** The lanes after a messageId: typed, so hashing one allocates nothing. */
  private readonly lanes = new Int32Array(4);

  constructor(tenantId: string, workspaceId: string) {
    this.mix(`${NAMESPACE}${tenantId.length}:${tenantId}${workspaceId.length}:${workspaceId}`);
    this.prefix.set(this.lanes);
  }

  idOf(messageId: string): string {
    if (UUID.test(messageId)) return messageId;
    this.mix(messageId);
    let h1 = this.lanes[0] as number;
    let h2 = this.lanes[1] as number;
    let h3 = this.lanes[2] as number;
    let h4 = this.lanes[3] as number;
    h1 = Math.imul(h3 ^ (h1 >>> 18), 597399067);
    h2 = Math.imul(h4 ^ (h2 >>> 22), 2869860233);
    h3 = Math.imul(h1 ^ (h3 >>> 17), 951274213);
    h4 = Math.imul(h2 ^ (h4 >>> 19), 2716044179);
    h1 ^= h2 ^ h3 ^ h4;
    h2 ^= h1;
    h3 ^= h1;
    h4 ^= h1;
    // Version 8 in the 13th hex digit, variant 10 in the top bits of the 17th.
    h2 = (h2 & 0xffff0fff) | 0x00008000;
    h3 = (h3 & 0x3fffffff) | 0x80000000;
    const middle = hex32(h2);
    const low = hex32(h3);
    return `${hex32(h1)}-${middle.slice(0, 4)}-${middle.slice(4)}-${low.slice(0, 4)}-${low.slice(4)}${hex32(h4)}`;
  }

  /** Runs cyrb128's rounds over `text`, from the prefix's lanes into `lanes`. */
  private mix(text: string): void {
    let h1 = this.prefix[0] as number;
    let h2 = this.prefix[1] as number;
    let h3 = this.prefix[2] as number;
    let h4 = this.prefix[3] as number;
    for (let i = 0; i < text.length; i += 1) {
      const k = text.charCodeAt(i);
      h1 = h2 ^ Math.imul(h1 ^ k, 597399067);
      h2 = h3 ^ Math.imul(h2 ^ k, 2869860233);
      h3 = h4 ^ Math.imul(h3 ^ k, 951274213);
      h4 = h1 ^ Math.imul(h4 ^ k, 2716044179);
    }
    this.lanes[0] = h1;
    this.lanes[1] = h2;
    this.lanes[2] = h3;
    this.lanes[3] = h4;
  }
}
