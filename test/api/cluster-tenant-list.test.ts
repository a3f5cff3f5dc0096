import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { mergePages } from '../../src/api/cluster-tenant-list.js';
import { decodeCursor } from '../../src/store/cursor.js';

const tenant = (tenant_id: string) => ({
  tenant_id,
  created_at: '2026-11-26T08:00:00Z',
  workspaces: 1,
});
const page = (ids: string[], more: boolean) => ({
  items: ids.map(tenant),
  next_cursor: more ? 'more' : null,
});
const cursorOf = (cursor: string | null) =>
  cursor === null ? null : decodeCursor(cursor, z.object({ t: z.string() })).t;

describe('the tenant list merged across owners', () => {
  it('answers the first tenants of every page in id order, each once', () => {
    const merged = mergePages(
      [page(['acme', 'initech'], false), page(['beta', 'initech', 'zeta'], false)],
      10,
    );
    expect(merged.items.map((t) => t.tenant_id)).toEqual(['acme', 'beta', 'initech', 'zeta']);
    expect(merged.next_cursor).toBeNull();
  });

  it('points the cursor at the last tenant answered when more are left on any owner', () => {
    const cut = mergePages([page(['a', 'c'], false), page(['b', 'd'], false)], 3);
    expect(cut.items.map((t) => t.tenant_id)).toEqual(['a', 'b', 'c']);
    expect(cursorOf(cut.next_cursor)).toBe('c');
    // Every tenant of one owner answered, but that owner has more after them.
    const exhausted = mergePages([page(['a', 'b'], true), page([], false)], 2);
    expect(exhausted.items.map((t) => t.tenant_id)).toEqual(['a', 'b']);
    expect(cursorOf(exhausted.next_cursor)).toBe('b');
  });

  it('answers an empty page without a cursor', () => {
    expect(mergePages([page([], false), page([], false)], 5)).toEqual({
      items: [],
      next_cursor: null,
    });
  });
});
