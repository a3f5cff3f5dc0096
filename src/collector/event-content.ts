import type { EventSource } from '../landing-format.js';
import { isWellFormed } from '../well-formed.js';
import type { Envelope } from './envelope.js';

/** `properties` is level 1; each object or array inside it one more (docs/decisions.md "Event content limits"). */
export const MAX_PROPERTY_DEPTH = 32;
/** Object keys in an event's properties, all levels together. */
export const MAX_PROPERTY_KEYS = 1000;

/** Why an event's content is refused: a snake_case code and the field at fault. */
export interface ContentFault {
  code: 'properties_too_deep' | 'too_many_properties' | 'lone_surrogate' | 'no_identifiers';
  path: string;
  reason: string;
}

/** An object or array met in the walk, with how it was reached, to name a path only on a fault. */
interface Container {
  value: object;
  depth: number;
  parent: Container | null;
  key: string;
}

function pathOf(parent: Container, key: string): string {
  const keys = [key];
  for (let at: Container | null = parent; at?.parent; at = at.parent) keys.push(at.key);
  return keys.reverse().join('.');
}

const TOO_DEEP: ContentFault = {
  code: 'properties_too_deep',
  path: 'properties',
  reason: `nest more than ${MAX_PROPERTY_DEPTH} levels deep`,
};
const TOO_MANY_KEYS: ContentFault = {
  code: 'too_many_properties',
  path: 'properties',
  reason: `hold more than ${MAX_PROPERTY_KEYS} keys in all`,
};
const loneSurrogate = (path: string, what: string): ContentFault => ({
  code: 'lone_surrogate',
  path,
  reason: `${what} a lone UTF-16 surrogate`,
});

/**
 * Walks the envelope with a stack of its own, never the call stack, so properties nested hundreds
 * of thousands of levels deep cost a refusal and not the process: every string and key must be
 * well-formed UTF-16 (a lone surrogate has no UTF-8 form, so ingest could not take it), and
 * properties stay within the depth and key limits. Stops at the first fault.
 */
function checkTree(event: Envelope): ContentFault | null {
  const stack: Container[] = [{ value: event, depth: 0, parent: null, key: '' }];
  let keys = 0;
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    const { value, depth } = node;
    if (depth > MAX_PROPERTY_DEPTH) return TOO_DEEP;
    const array = Array.isArray(value);
    // JSON.parse and zod build plain objects and arrays: for…in sees their own keys only.
    for (const key in value) {
      if (!array) {
        if (depth >= 1 && ++keys > MAX_PROPERTY_KEYS) return TOO_MANY_KEYS;
        if (!isWellFormed(key)) return loneSurrogate(pathOf(node, key), 'has a key with');
      }
      const child: unknown = (value as Record<string, unknown>)[key];
      if (typeof child === 'string') {
        if (!isWellFormed(child)) return loneSurrogate(pathOf(node, key), 'holds');
      } else if (typeof child === 'object' && child !== null) {
        stack.push({ value: child, depth: depth + 1, parent: node, key });
      }
    }
  }
  return null;
}

/** What ingest can key: a string that is not blank, or a number (src/identity/normalize.ts). */
function isIdentifierValue(value: unknown): boolean {
  return (typeof value === 'string' && value.trim() !== '') || typeof value === 'number';
}

/**
 * A server event that names no identifier at all: no `cookie:` anon_id with a visitor id, and no
 * string or number in `properties.identifiers`. Ingest would reject it (`no_identifiers`); which
 * types a tenant declared and which values are placeholders only ingest knows.
 */
function lacksIdentifiers(event: Envelope): boolean {
  if (event.anon_id !== undefined && event.anon_id.slice('cookie:'.length).trim() !== '') {
    return false;
  }
  const identifiers = event.properties.identifiers;
  if (typeof identifiers !== 'object' || identifiers === null || Array.isArray(identifiers)) {
    return true;
  }
  return !Object.values(identifiers).some(isIdentifierValue);
}

/**
 * What the collector can tell about an event's content before it lands, in the order reported:
 * its shape (depth, keys, UTF-16), then, for server events, whether it names any identifier.
 */
export function checkEventContent(event: Envelope, source: EventSource): ContentFault | null {
  const fault = checkTree(event);
  if (fault) return fault;
  if (source === 'server' && lacksIdentifiers(event)) {
    return {
      code: 'no_identifiers',
      path: 'properties.identifiers',
      reason: 'holds no identifier value (a non-empty string or a number), and there is no anon_id',
    };
  }
  return null;
}
