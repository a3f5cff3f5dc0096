import { Option } from 'commander';

export const tenantOption = () =>
  new Option('-t, --tenant <tenant>', 'tenant id').makeOptionMandatory();

export const workspaceOption = () =>
  new Option('-w, --workspace <workspace>', 'workspace id').makeOptionMandatory();

/** `/v1/tenants/{tenant}/…` with every caller-given part encoded. */
export function tenantPath(tenant: string, ...rest: string[]): string {
  return ['/v1/tenants', ...[tenant, ...rest].map(encodeURIComponent)].join('/');
}
