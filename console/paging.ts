import { api } from './api.js';

/** The most rows a paged route gives in one answer (`limit` up to 500, src/store/cursor.ts). */
const LARGEST_PAGE = 500;

/** One page of a list route: its rows, under the route's own key, and the cursor of the next. */
export interface Page<T> {
  rows: T[];
  next_cursor: string | null;
}

/**
 * The page of `path` (which may carry a query already) after `cursor`, or its first page. The
 * rows are read under `key`, as each route names them (`segments`, `webhooks`, …).
 */
export async function readPage<T>(
  path: string,
  key: string,
  limit: number,
  cursor: string | null,
): Promise<Page<T>> {
  const query = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
  const page = await api<Record<string, unknown> & { next_cursor: string | null }>(
    'GET',
    `${path}${path.includes('?') ? '&' : '?'}${query}`,
  );
  return { rows: page[key] as T[], next_cursor: page.next_cursor };
}

/** Every page of a list route, for what needs the whole list (a picker, the segment list). */
export async function everyPage<T>(path: string, key: string): Promise<T[]> {
  const rows: T[] = [];
  let cursor: string | null = null;
  do {
    const page: Page<T> = await readPage<T>(path, key, LARGEST_PAGE, cursor);
    rows.push(...page.rows);
    cursor = page.next_cursor;
  } while (cursor);
  return rows;
}
