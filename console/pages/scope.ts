import { session } from '../session.js';

/** The tenant and workspace the pages show, once the switcher has chosen them. */
export function currentScope(): { tenant: string; workspace: string } | null {
  const tenant = session.tenant.value;
  const workspace = session.workspace.value;
  return tenant && workspace ? { tenant, workspace } : null;
}
