import { useSignal, useSignalEffect } from '@preact/signals';
import { pathOf } from '../api.js';
import { everyPage } from '../paging.js';
import { session } from '../session.js';
import { inputValue, Options } from './field.js';

/** A labelled select of the switcher. */
function Choice(props: {
  label: string;
  value: string | null;
  values: string[];
  onChoose: (value: string) => void;
}) {
  return (
    <label>
      {props.label}
      <select value={props.value ?? ''} onChange={(event) => props.onChoose(inputValue(event))}>
        <Options values={props.values} />
      </select>
    </label>
  );
}

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
        <Choice
          label="Tenant"
          value={session.tenant.value}
          values={tenants.value}
          onChoose={(tenant) => {
            session.tenant.value = tenant;
            session.workspace.value = null;
          }}
        />
      )}
      <Choice
        label="Workspace"
        value={session.workspace.value}
        values={workspaces.value}
        onChoose={(workspace) => {
          session.workspace.value = workspace;
        }}
      />
    </div>
  );
}
