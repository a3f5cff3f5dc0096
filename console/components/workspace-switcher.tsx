import { useSignal, useSignalEffect } from '@preact/signals';
import { pathOf } from '../api.js';
import { everyPage } from '../paging.js';
import { session } from '../session.js';

/**
 * The tenant (operator tokens) and workspace (tenant and operator tokens) the pages show. A
 * workspace token sees one workspace, so it has nothing to switch.
 */
export function WorkspaceSwitcher() {
  const tenants = useSignal<string[]>([]);
  const workspaces = useSignal<string[]>([]);
  const who = session.whoami.value;

  useSignalEffect(() => {
    if (session.whoami.value?.kind !== 'operator') return;
    everyPage<{ tenant_id: string }>('/v1/operator/tenants', 'tenants').then(
      (list) => {
        tenants.value = list.map((tenant) => tenant.tenant_id);
        session.tenant.value ??= tenants.value[0] ?? null;
      },
      () => undefined,
    );
  });
  useSignalEffect(() => {
    const tenant = session.tenant.value;
    if (!tenant || session.whoami.value?.kind === 'workspace') return;
    everyPage<{ workspace_id: string }>(
      pathOf`/v1/tenants/${tenant}/workspaces`,
      'workspaces',
    ).then(
      (list) => {
        workspaces.value = list.map((workspace) => workspace.workspace_id);
        if (!session.workspace.value || !workspaces.value.includes(session.workspace.value))
          session.workspace.value = workspaces.value[0] ?? null;
      },
      () => undefined,
    );
  });

  if (!who) return null;
  if (who.kind === 'workspace')
    return (
      <p class="scope">
        {who.tenant_id} / {who.workspace_id}
      </p>
    );
  return (
    <div class="scope">
      {who.kind === 'operator' && (
        <label>
          Tenant
          <select
            value={session.tenant.value ?? ''}
            onChange={(event) => {
              session.tenant.value = (event.target as HTMLSelectElement).value;
              session.workspace.value = null;
            }}
          >
            {tenants.value.map((tenant) => (
              <option key={tenant} value={tenant}>
                {tenant}
              </option>
            ))}
          </select>
        </label>
      )}
      <label>
        Workspace
        <select
          value={session.workspace.value ?? ''}
          onChange={(event) => {
            session.workspace.value = (event.target as HTMLSelectElement).value;
          }}
        >
          {workspaces.value.map((workspace) => (
            <option key={workspace} value={workspace}>
              {workspace}
            </option>
          ))}
        </select>
      </label>
    </div>
  );
}
