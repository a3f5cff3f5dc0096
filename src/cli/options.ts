import { Option } from 'commander';

export const tenantOption = () =>
  new Option('-t, --tenant <tenant>', 'tenant id').makeOptionMandatory();

export const workspaceOption = () =>
  new Option('-w, --workspace <workspace>', 'workspace id').makeOptionMandatory();

/** The flags of a listing the API pages (design §6: `limit`, `cursor`). */
export interface PagingFlags {
  limit?: string;
  cursor?: string;
}

export const limitOption = () => new Option('--limit <n>', 'page size (1-500)');

export const cursorOption = () =>
  new Option('--cursor <cursor>', 'next_cursor of the previous page');

/** `/v1/tenants/{tenant}/…` with every caller-given part encoded. */
export function tenantPath(tenant: string, ...rest: string[]): string {
  return ['/v1/tenants', ...[tenant, ...rest].map(encodeURIComponent)].join('/');
}
