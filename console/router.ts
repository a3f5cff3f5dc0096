import { signal } from '@preact/signals';

/**
 * The page shown, from the URL's hash (`#/segments/vip`): the console is static files, so the
 * server needs no route per page. Ids in it are the API's (segment, profile), never an email or
 * phone, which would stay in the browser's history.
 */
function current(): string {
  return decodeURIComponent(location.hash.replace(/^#/, '')) || '/';
}

export const route = signal(current());

addEventListener('hashchange', () => {
  route.value = current();
});

export function navigate(path: string): void {
  location.hash = `#${path}`;
}

/** The path's segments after a page's prefix: `/segments/vip` under `/segments` is `['vip']`. */
export function routeParts(prefix: string, path: string): string[] | null {
  if (path !== prefix && !path.startsWith(`${prefix}/`)) return null;
  return path
    .slice(prefix.length)
    .split('/')
    .filter((part) => part !== '');
}
