import { type Signal, useSignal, useSignalEffect } from '@preact/signals';
import { useRef } from 'preact/hooks';
import { messageOf } from '../components/field.js';
import { readPage } from '../paging.js';

/** Rows a list shows before its "Show more": a screenful, well under a route's largest page. */
const LIST_PAGE_SIZE = 100;

/** What a list over a paged route shows, and the two ways to read more of it. */
export interface PagedList<T> {
  /** The rows read so far, page after page; null until the first page is in. */
  rows: Signal<T[] | null>;
  failure: Signal<string | null>;
  /** The cursor of the page after the rows shown; null when the last page is shown. */
  next: Signal<string | null>;
  /** Reads the next page and shows it under the rows shown. */
  showMore: () => Promise<void>;
  /** Reads the first page again (after an action changed the list). */
  reload: () => void;
}

/**
 * The first page of a paged route (`next_cursor`), then each next one on request. `path` is
 * called inside an effect, so a signal it reads (a filter) reads the list afresh when it changes;
 * it returns null while the list has nothing to read (no tenant chosen). A page asked for
 * before a reload is dropped when it comes back after it, so rows of two readings never mix.
 */
export function usePagedList<T>(
  key: string,
  path: () => string | null,
  pageSize = LIST_PAGE_SIZE,
): PagedList<T> {
  const rows = useSignal<T[] | null>(null);
  const failure = useSignal<string | null>(null);
  const next = useSignal<string | null>(null);
  const reloads = useSignal(0);
  const reading = useRef<{ path: string } | null>(null);

  useSignalEffect(() => {
    reloads.value;
    const base = path();
    if (base === null) return;
    const current = { path: base };
    reading.current = current;
    readPage<T>(base, key, pageSize, null).then(
      (page) => {
        if (reading.current !== current) return;
        rows.value = page.rows;
        next.value = page.next_cursor;
        failure.value = null;
      },
      (error) => {
        if (reading.current === current) failure.value = messageOf(error);
      },
    );
  });

  const showMore = async () => {
    const current = reading.current;
    const cursor = next.value;
    if (!current || !cursor) return;
    try {
      const page = await readPage<T>(current.path, key, pageSize, cursor);
      if (reading.current !== current || next.value !== cursor) return;
      rows.value = [...(rows.value ?? []), ...page.rows];
      next.value = page.next_cursor;
      failure.value = null;
    } catch (error) {
      if (reading.current === current) failure.value = messageOf(error);
    }
  };

  return {
    rows,
    failure,
    next,
    showMore,
    reload: () => {
      reloads.value += 1;
    },
  };
}
