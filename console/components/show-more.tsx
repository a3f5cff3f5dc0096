import type { PagedList } from '../hooks/use-paged-list.js';

/** The button under a paged list that reads its next page; absent once the last page is shown. */
export function ShowMore<T>({ list, what }: { list: PagedList<T>; what: string }) {
  if (!list.next.value) return null;
  return (
    <button
      type="button"
      class="quiet"
      aria-label={`Show more ${what}`}
      onClick={() => list.showMore()}
    >
      Show more
    </button>
  );
}
