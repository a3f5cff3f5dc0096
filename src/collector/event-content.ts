import type { Envelope, EventSource } from './envelope.js';

/** `properties` is level 1; each object or array inside it one more (docs/decisions.md "Collector"). */
export const MAX_PROPERTY_DEPTH = 32;
/** Object keys in an event's properties, all levels together. */
export const MAX_PROPERTY_KEYS = 1000;

/** Why an event's content is refused: a snake_case code and the field at fault. */
export interface ContentFault {
  code: 'properties_too_deep' | 'too_many_properties' | 'lone_surrogate' | 'no_identifiers';
  path: string;
  reason: string;
}

/** With the u flag a lone surrogate is a code point of category Cs; a well-formed pair is not. */
const LONE_SURROGATE = /\p{Cs}/u;

/** A value met in the walk, with how it was reached, to name its path only when it is at fault. */
interface Node {
  value: unknown;
  depth: number;
  parent: Node | null;
  key: string;
}

function pathOf(node: Node): string {
  const keys: string[] = [];
  for (let at: Node | null = node; at?.parent; at = at.parent) keys.push(at.key);
  return keys.reverse().join('.') || 'event';
}

/**
 * Walks the envelope with a stack of its own, never the call stack, so properties nested a
 * million levels deep cost a refusal and not the process: every string and key must be well-formed
 * UTF-16 (ingest cannot store a lone surrogate), and properties stay within the depth and key
 * limits. Stops at the first fault.
 */
function checkTree(event: Envelope): ContentFault | null {
  const stack: Node[] = [{ value: event, depth: 0, parent: null, key: '' }];
  let keys = 0;
  for (let node = stack.pop(); node !== undefined; node = stack.pop()) {
    const { value, depth } = node;
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) {
        return {
          code: 'lone_surrogate',
          path: pathOf(node),
          reason: 'holds a lone UTF-16 surrogate',
        };
      }
      continue;
    }
    if (typeof value !== 'object' || value === null) continue;
    if (depth > MAX_PROPERTY_DEPTH) {
      return {
        code: 'properties_too_deep',
        path: 'properties',
        reason: `nest more than ${MAX_PROPERTY_DEPTH} levels deep`,
      };
    }
    const entries = Array.isArray(value) ? value.entries() : Object.entries(value);
    for (const [key, child] of entries) {
      const name = String(key);
      if (!Array.isArray(value)) {
        if (depth >= 1 && ++keys > MAX_PROPERTY_KEYS) {
          return {
            code: 'too_many_properties',
            path: 'properties',
            reason: `hold more than ${MAX_PROPERTY_KEYS} keys in all`,
          };
        }
        if (LONE_SURROGATE.test(name)) {
          return {
            code: 'lone_surrogate',
            path: pathOf({ value: child, depth: depth + 1, parent: node, key: name }),
            reason: 'has a key with a lone UTF-16 surrogate',
          };
        }
      }
      stack.push({ value: child, depth: depth + 1, parent: node, key: name });
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
