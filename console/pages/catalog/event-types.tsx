import { useSignal, useSignalEffect } from '@preact/signals';
import { api, pathOf } from '../../api.js';
import { Alert } from '../../components/alert.js';
import { ConfirmDialog } from '../../components/confirm-dialog.js';
import { boundTo, messageOf, TextField } from '../../components/field.js';
import { ShowMore } from '../../components/show-more.js';
import { RowAction, Table } from '../../components/table.js';
import { useFormReasons } from '../../hooks/use-form-reasons.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { canWrite } from '../../session.js';

export interface EventType {
  event_name: string;
  dedup_entity: string | null;
  dedup_key_paths: string[] | null;
}

/** A metric definition reading an event type (the API's dry run of its delete). */
interface EventTypeDependent {
  metric_name: string;
  workspace_id: string;
}

interface PlannedDelete {
  name: string;
  metrics: EventTypeDependent[];
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

/**
 * Event types of the tenant with their events in the workspace over 24 h and 7 days, a page at a
 * time; `onChange` is told when one is registered or deleted here.
 */
export function EventTypes(props: { tenant: string; workspace: string; onChange: () => void }) {
  const list = usePagedList<EventType>(
    'event_types',
    () => pathOf`/v1/tenants/${props.tenant}/event-types`,
  );
  const counts = useSignal(new Map<string, EventCount>());
  const countsFailure = useSignal<string | null>(null);
  const changes = useSignal(0);

  useSignalEffect(() => {
    changes.value;
    api<{ counts: EventCount[] }>(
      'GET',
      `${pathOf`/v1/tenants/${props.tenant}/event-type-counts`}?workspace_id=${encodeURIComponent(props.workspace)}`,
    ).then(
      (counted) => {
        counts.value = new Map(counted.counts.map((count) => [count.event_name, count]));
        countsFailure.value = null;
      },
      (error) => {
        countsFailure.value = messageOf(error);
      },
    );
  });

  const changed = () => {
    list.reload();
    changes.value += 1;
    props.onChange();
  };
  const planned = useSignal<PlannedDelete | null>(null);
  const deleting = useSignal(false);
  const deleteFailure = useSignal<string | null>(null);
  // First the metric definitions reading it (a dry run): while there are any, it cannot go.
  const plan = async (name: string) => {
    try {
      const answer = await api<{ metric_definitions: EventTypeDependent[] }>(
        'DELETE',
        `${pathOf`/v1/tenants/${props.tenant}/event-types/${name}`}?dry_run=true`,
      );
      deleteFailure.value = null;
      planned.value = { name, metrics: answer.metric_definitions };
    } catch (error) {
      list.failure.value = messageOf(error);
    }
  };
  const remove = async (name: string) => {
    deleting.value = true;
    try {
      await api('DELETE', pathOf`/v1/tenants/${props.tenant}/event-types/${name}`);
      planned.value = null;
      changed();
    } catch (error) {
      deleteFailure.value = messageOf(error);
    } finally {
      deleting.value = false;
    }
  };

  return (
    <section aria-labelledby="event-types-title">
      <h2 id="event-types-title">Event types</h2>
      <Alert message={list.failure.value ?? countsFailure.value} />
      <Table
        caption={`Events stored in workspace ${props.workspace}`}
        columns={[
          'Name',
          'Deduplicated by',
          'Last 24 h',
          'Last 7 days',
          canWrite.value && 'Actions',
        ]}
      >
        {(list.rows.value ?? []).map((type) => {
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
                  <RowAction
                    label={`Delete event type ${type.event_name}`}
                    onClick={() => plan(type.event_name)}
                  >
                    Delete
                  </RowAction>
                </td>
              )}
            </tr>
          );
        })}
      </Table>
      <ShowMore list={list} what="event types" />
      {planned.value && (
        <ConfirmDialog
          title={`Delete event type ${planned.value.name}?`}
          confirmLabel={
            planned.value.metrics.length === 0 ? `Delete event type ${planned.value.name}` : null
          }
          busy={deleting.value}
          failure={deleteFailure.value}
          onConfirm={() => planned.value && remove(planned.value.name)}
          onClose={() => {
            planned.value = null;
          }}
        >
          {planned.value.metrics.length === 0 ? (
            <p>
              Events of {planned.value.name} already stored stay; new ones are refused as an unknown
              event type until it is registered again.
            </p>
          ) : (
            <>
              <p>
                {planned.value.name} cannot be deleted while metric definitions read it. Delete them
                first:
              </p>
              <ul aria-label={`Metric definitions reading ${planned.value.name}`}>
                {planned.value.metrics.map((metric) => (
                  <li key={JSON.stringify([metric.metric_name, metric.workspace_id])}>
                    {metric.metric_name} (
                    {metric.workspace_id === '*' ? 'every workspace' : metric.workspace_id})
                  </li>
                ))}
              </ul>
            </>
          )}
        </ConfirmDialog>
      )}
      {canWrite.value && <RegisterEventType tenant={props.tenant} onDone={changed} />}
    </section>
  );
}

/** The registration form as the user types it: key paths comma-separated. */
const EMPTY = { event_name: '', dedup_entity: '', dedup_key_paths: '' };

function RegisterEventType(props: { tenant: string; onDone: () => void }) {
  const draft = useSignal({ ...EMPTY });
  const form = useFormReasons();
  const reasons = form.reasons.value;

  const submit = async (event: Event) => {
    event.preventDefault();
    const { event_name, dedup_entity, dedup_key_paths } = draft.value;
    const keyPaths = pathsOf(dedup_key_paths);
    // Both or neither: the API says which one is missing when only one is given.
    const body = {
      ...(dedup_entity.trim() ? { dedup_entity: dedup_entity.trim() } : {}),
      ...(keyPaths.length > 0 ? { dedup_key_paths: keyPaths } : {}),
    };
    const registered = await form.submit(() =>
      api('PUT', pathOf`/v1/tenants/${props.tenant}/event-types/${event_name.trim()}`, body),
    );
    if (!registered) return;
    draft.value = { ...EMPTY };
    props.onDone();
  };

  return (
    <form class="stack" onSubmit={submit} aria-labelledby="register-event-title">
      <h3 id="register-event-title">Register an event type</h3>
      <TextField
        id="event-name"
        label="Event name"
        required
        {...boundTo(draft, 'event_name', reasons)}
      />
      <TextField
        id="dedup-entity"
        label="Dedup entity"
        hint="With key paths, or leave both blank to deduplicate by event id."
        {...boundTo(draft, 'dedup_entity', reasons)}
      />
      <TextField
        id="dedup-key-paths"
        label="Dedup key paths"
        hint="Comma-separated, such as properties.order_id"
        {...boundTo(draft, 'dedup_key_paths', reasons)}
      />
      <Alert message={form.failure.value} />
      <button type="submit">Register</button>
    </form>
  );
}
