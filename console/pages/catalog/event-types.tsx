import { useSignal, useSignalEffect } from '@preact/signals';
import { ApiError, api, pathOf } from '../../api.js';
import { Field, inputValue, messageOf, reasonsByField } from '../../components/field.js';
import { canWrite } from '../../session.js';

export interface EventType {
  event_name: string;
  dedup_entity: string | null;
  dedup_key_paths: string[] | null;
}

interface EventCount {
  event_name: string;
  last_24h: number;
  last_7d: number;
}

/** `properties.order_id, properties.sku` as the API's list; blank is none. */
function pathsOf(text: string): string[] {
  return text
    .split(',')
    .map((path) => path.trim())
    .filter((path) => path !== '');
}

/** Event types of the tenant with their events in the workspace over 24 h and 7 days. */
export function EventTypes(props: {
  tenant: string;
  workspace: string;
  onChange: (types: EventType[]) => void;
}) {
  const types = useSignal<EventType[]>([]);
  const counts = useSignal(new Map<string, EventCount>());
  const failure = useSignal<string | null>(null);
  const reload = useSignal(0);

  useSignalEffect(() => {
    reload.value;
    const { tenant, workspace } = props;
    Promise.all([
      api<{ event_types: EventType[] }>(
        'GET',
        `${pathOf`/v1/tenants/${tenant}/event-types`}?limit=500`,
      ),
      api<{ counts: EventCount[] }>(
        'GET',
        `${pathOf`/v1/tenants/${tenant}/event-type-counts`}?workspace_id=${encodeURIComponent(workspace)}`,
      ),
    ]).then(
      ([listed, counted]) => {
        types.value = listed.event_types;
        counts.value = new Map(counted.counts.map((count) => [count.event_name, count]));
        failure.value = null;
        props.onChange(listed.event_types);
      },
      (error) => {
        failure.value = messageOf(error);
      },
    );
  });

  const remove = async (name: string) => {
    try {
      await api('DELETE', pathOf`/v1/tenants/${props.tenant}/event-types/${name}`);
      reload.value += 1;
    } catch (error) {
      failure.value = messageOf(error);
    }
  };

  return (
    <section aria-labelledby="event-types-title">
      <h2 id="event-types-title">Event types</h2>
      {failure.value && (
        <p role="alert" class="error">
          {failure.value}
        </p>
      )}
      <div class="table-wrap">
        <table>
          <caption class="help">Events stored in workspace {props.workspace}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Deduplicated by</th>
              <th scope="col">Last 24 h</th>
              <th scope="col">Last 7 days</th>
              {canWrite.value && <th scope="col">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {types.value.map((type) => {
              const count = counts.value.get(type.event_name);
              return (
                <tr key={type.event_name}>
                  <th scope="row">{type.event_name}</th>
                  <td>
                    {type.dedup_entity
                      ? `${type.dedup_entity}: ${(type.dedup_key_paths ?? []).join(', ')}`
                      : 'event id'}
                  </td>
                  <td>{count?.last_24h ?? 0}</td>
                  <td>{count?.last_7d ?? 0}</td>
                  {canWrite.value && (
                    <td>
                      <button
                        type="button"
                        class="quiet"
                        aria-label={`Delete event type ${type.event_name}`}
                        onClick={() => remove(type.event_name)}
                      >
                        Delete
                      </button>
                    </td>
                  )}
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
      {canWrite.value && (
        <RegisterEventType
          tenant={props.tenant}
          onDone={() => {
            reload.value += 1;
          }}
        />
      )}
    </section>
  );
}

function RegisterEventType(props: { tenant: string; onDone: () => void }) {
  const name = useSignal('');
  const entity = useSignal('');
  const paths = useSignal('');
  const reasons = useSignal(new Map<string, string>());
  const failure = useSignal<string | null>(null);

  const submit = async (event: Event) => {
    event.preventDefault();
    const keyPaths = pathsOf(paths.value);
    // Both or neither: the API says which one is missing when only one is given.
    const body = {
      ...(entity.value.trim() ? { dedup_entity: entity.value.trim() } : {}),
      ...(keyPaths.length > 0 ? { dedup_key_paths: keyPaths } : {}),
    };
    try {
      await api('PUT', pathOf`/v1/tenants/${props.tenant}/event-types/${name.value.trim()}`, body);
      reasons.value = new Map();
      failure.value = null;
      name.value = '';
      entity.value = '';
      paths.value = '';
      props.onDone();
    } catch (error) {
      reasons.value = error instanceof ApiError ? reasonsByField(error) : new Map();
      failure.value = messageOf(error);
    }
  };

  return (
    <form class="stack" onSubmit={submit} aria-labelledby="register-event-title">
      <h3 id="register-event-title">Register an event type</h3>
      <Field id="event-name" label="Event name" reason={reasons.value.get('event_name')}>
        {(described) => (
          <input
            {...described}
            required
            value={name.value}
            onInput={(event) => {
              name.value = inputValue(event);
            }}
          />
        )}
      </Field>
      <Field
        id="dedup-entity"
        label="Dedup entity"
        hint="With key paths, or leave both blank to deduplicate by event id."
        reason={reasons.value.get('dedup_entity')}
      >
        {(described) => (
          <input
            {...described}
            value={entity.value}
            onInput={(event) => {
              entity.value = inputValue(event);
            }}
          />
        )}
      </Field>
      <Field
        id="dedup-key-paths"
        label="Dedup key paths"
        hint="Comma-separated, such as properties.order_id"
        reason={reasons.value.get('dedup_key_paths')}
      >
        {(described) => (
          <input
            {...described}
            value={paths.value}
            onInput={(event) => {
              paths.value = inputValue(event);
            }}
          />
        )}
      </Field>
      {failure.value && (
        <p role="alert" class="error">
          {failure.value}
        </p>
      )}
      <button type="submit">Register</button>
    </form>
  );
}
