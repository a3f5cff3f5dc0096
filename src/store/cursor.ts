import { z } from 'zod';
import { ValidationError } from '../errors.js';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 500;

/** What a listing route takes (design §6): `limit` rows after `cursor`, from the start without one. */
export interface PageQuery {
  limit: number;
  cursor: string | null;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

/** Cursors are opaque to callers: base64url of the last row's sort key. */
export function encodeCursor(key: Record<string, string>): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

export function decodeCursor<T extends z.ZodType>(cursor: string, shape: T): z.infer<T> {
  try {
    const parsed = shape.safeParse(JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')));
    if (parsed.success) return parsed.data;
  } catch {
    // falls through to the error below
  }
  throw ValidationError.field('cursor', 'is not a cursor this endpoint returned');
}

/** Rows were fetched with `limit + 1`: the extra row only says that another page exists. */
export function toPage<R, T>(
  rows: R[],
  limit: number,
  keyOf: (row: R) => Record<string, string>,
  map: (row: R) => T,
): Page<T> {
  const items = rows.slice(0, limit);
  const last = items.at(-1);
  return {
    items: items.map(map),
    next_cursor: rows.length > limit && last !== undefined ? encodeCursor(keyOf(last)) : null,
  };
}

export const segmentCursorSchema = z.object({ w: z.string(), s: z.string() });
