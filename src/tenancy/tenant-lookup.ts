import { NotFoundError } from '../errors.js';
import type { Session } from '../store/session.js';

export async function tenantExists(session: Session, tenantId: string): Promise<boolean> {
  return (await session.one('tenant_exists', { tenant_id: tenantId })) !== null;
}

export async function requireTenant(session: Session, tenantId: string): Promise<void> {
  if (!(await tenantExists(session, tenantId)))
    throw new NotFoundError(`tenant ${tenantId} does not exist`);
}
