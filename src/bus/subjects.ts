import { createHash } from 'node:crypto';

/**
 * Names on the bus made from tenant, workspace and event ids (docs/cluster-design.md §2). Ids
 * are data: each becomes one subject token that can never hold `.`, `*`, `>` or whitespace, so
 * no id splits a token, acts as a wildcard or reaches another tenant's subject. The same token
 * is a valid KV key part and durable name.
 */

/** The stream every collector publishes to and every owner consumes from. */
export const EVENTS_STREAM = 'CDS_EVENTS';
const EVENTS_PREFIX = 'cds.events';

const PASSTHROUGH = /^[a-z0-9_-]$/;
const TOKEN_SHAPE = /^[a-z0-9_=A-F-]+$/;

/**
 * `[a-z0-9_-]` as it is, every other UTF-8 byte as `=XX` (uppercase hex; `=` itself is `=3D`):
 * every id valid in the API today is its own token, and the encoding is injective.
 */
export function subjectToken(id: string): string {
  if (id.length === 0) throw new Error('an empty id has no subject token');
  let token = '';
  for (const char of id) {
    if (PASSTHROUGH.test(char)) token += char;
    else
      for (const byte of Buffer.from(char, 'utf8'))
        token += `=${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return token;
}

/** The id a token was made from; a string that no id encodes to throws. */
export function fromSubjectToken(token: string): string {
  if (!TOKEN_SHAPE.test(token)) throw new Error(`not a subject token: ${JSON.stringify(token)}`);
  const bytes: number[] = [];
  for (let index = 0; index < token.length; ) {
    const char = token[index] as string;
    if (char === '=') {
      const hex = token.slice(index + 1, index + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) throw new Error(`not a subject token: ${token}`);
      bytes.push(Number.parseInt(hex, 16));
      index += 3;
    } else {
      bytes.push(char.charCodeAt(0));
      index += 1;
    }
  }
  const id = Buffer.from(bytes).toString('utf8');
  if (subjectToken(id) !== token) throw new Error(`not a subject token: ${token}`);
  return id;
}

/** Where a collector publishes one event of a tenant's workspace. */
export function eventSubject(tenantId: string, workspaceId: string): string {
  return `${EVENTS_PREFIX}.${subjectToken(tenantId)}.${subjectToken(workspaceId)}`;
}

/** Every event subject, the stream's one subject filter. */
export const ALL_EVENTS = `${EVENTS_PREFIX}.>`;

/** Every event of one tenant: the one filter subject of its consumer (2.9 takes one). */
export function tenantFilter(tenantId: string): string {
  return `${EVENTS_PREFIX}.${subjectToken(tenantId)}.>`;
}

/** The tenant an event subject belongs to. */
export function tenantOfSubject(subject: string): string {
  const parts = subject.split('.');
  if (parts.length !== 4 || `${parts[0]}.${parts[1]}` !== EVENTS_PREFIX)
    throw new Error(`not an event subject: ${subject}`);
  return fromSubjectToken(parts[2] as string);
}

/** The durable pull consumer that owns a tenant's events. */
export function durableName(tenantId: string): string {
  return `own-${subjectToken(tenantId)}`;
}

/** A tenant's key in the registry and shard buckets. */
export function tenantKey(tenantId: string): string {
  return `tenant.${subjectToken(tenantId)}`;
}

/** The tenant a `tenant.<T>` key names. */
export function tenantOfKey(key: string): string {
  if (!key.startsWith('tenant.')) throw new Error(`not a tenant key: ${key}`);
  return fromSubjectToken(key.slice('tenant.'.length));
}

/**
 * `Nats-Msg-Id` of an event: dedup spans the whole stream, so the id is scoped by tenant and
 * workspace (one tenant's ids never suppress another's), and escaped, since a header value
 * cannot hold CR or LF and an event id may.
 */
export function eventMessageId(tenantId: string, workspaceId: string, eventId: string): string {
  return `${subjectToken(tenantId)}/${subjectToken(workspaceId)}/${subjectToken(eventId)}`;
}

/**
 * `Nats-Msg-Id` of a request chunk (docs/cluster-design.md §3): scoped as an event's, and named
 * by a SHA-256 of its events' ids (each length-prefixed, so no two lists of ids hash alike), so a
 * publish of the same chunk again (the collector's own retry, or the client's retry of the
 * request through another collector) is dropped by the stream.
 */
export function chunkMessageId(
  tenantId: string,
  workspaceId: string,
  eventIds: readonly string[],
): string {
  const hash = createHash('sha256');
  for (const id of eventIds) hash.update(`${id.length}:${id}`);
  return `${subjectToken(tenantId)}/${subjectToken(workspaceId)}/chunk:${eventIds.length}:${hash.digest('base64url')}`;
}
