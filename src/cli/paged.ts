import type { AdminClient, AdminRequest } from './admin-request.js';

/**
 * Every item of a paged listing (design §6), following `next_cursor` to the last page, in pages
 * as large as the API gives, so that a listing command still prints everything.
 */
export async function allPages<K extends string, T>(
  client: AdminClient,
  request: AdminRequest,
  key: K,
): Promise<T[]> {
  // Loaded here, not with the command definitions: store/cursor.js brings zod.
  const { MAX_PAGE_SIZE } = await import('../store/cursor.js');
  const items: T[] = [];
  let cursor: string | undefined;
  do {
    const page = await client<Record<K, T[]> & { next_cursor: string | null }>({
      ...request,
      query: { ...request.query, limit: MAX_PAGE_SIZE, cursor },
    });
    items.push(...page[key]);
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return items;
}
