import { useSignal } from '@preact/signals';
import { api, pathOf } from '../../api.js';
import { Alert } from '../../components/alert.js';
import { ConfirmDialog } from '../../components/confirm-dialog.js';
import {
  boundTo,
  Field,
  inputValue,
  messageOf,
  Options,
  TextField,
} from '../../components/field.js';
import { ShowMore } from '../../components/show-more.js';
import { RowAction, Table } from '../../components/table.js';
import { useFormReasons } from '../../hooks/use-form-reasons.js';
import { usePagedList } from '../../hooks/use-paged-list.js';
import { canWrite } from '../../session.js';

interface MetricDefinition {
  workspace_id: string;
  metric_name: string;
  event_name: string;
  value_kind: string;
  value_path: string | null;
  display_name: string | null;
  description: string | null;
  window_days: number | null;
  aggregation: string | null;
  keep: number | null;
  /** Conditions on the events read: behaviour metrics only. */
  where: { path: string; op: string; value: unknown }[] | null;
  /** The segments a behaviour metric is computed for; null for the catalog's own. */
  computed_for_segments: string[] | null;
}

/** A segment whose rule compares the metric (the API's dry run of a delete). */
interface MetricDependent {
  workspace_id: string;
  segment_id: string;
  display_name: string;
  status: string;
  still_collected: boolean;
}

interface PlannedDelete {
  definition: MetricDefinition;
  segments: MetricDependent[];
}

/** What deleting a definition does to the segments on its metric (docs/decisions.md). */
function MetricDependents({ planned }: { planned: PlannedDelete }) {
  const { definition, segments } = planned;
  return (
    <>
      <p>
        Collecting <code>{definition.metric_name}</code> from <code>{definition.event_name}</code>{' '}
        stops. Values already computed keep their last value.
      </p>
      {segments.length === 0 ? (
        <p>No segment uses {definition.metric_name}.</p>
      ) : (
        <>
          <p>Segments whose rule uses {definition.metric_name}:</p>
          <ul aria-label={`Segments using ${definition.metric_name}`}>
            {segments.map((segment) => (
              <li key={JSON.stringify([segment.workspace_id, segment.segment_id])}>
                <strong>{segment.display_name}</strong> ({segment.segment_id} in{' '}
                {segment.workspace_id}, {segment.status}):{' '}
                {segment.still_collected
                  ? 'another definition still collects the metric there'
                  : 'goes on with the values kept, which no longer change'}
              </li>
            ))}
          </ul>
        </>
      )}
    </>
  );
}

/** What `src/metrics/definition-schema.ts` takes; the API checks how they combine. */
const VALUE_KINDS = ['count', 'property_number', 'property_string'] as const;
const AGGREGATIONS = ['latest', 'recent'] as const;

function optionsOf(definition: MetricDefinition): string {
  const parts: string[] = [];
  if (definition.value_path) parts.push(`of ${definition.value_path}`);
  if (definition.aggregation) parts.push(definition.aggregation);
  if (definition.keep !== null) parts.push(`keep ${definition.keep}`);
  if (definition.window_days !== null) parts.push(`${definition.window_days} days`);
  for (const { path, op, value } of definition.where ?? [])
    parts.push(`where ${path} ${op} ${JSON.stringify(value)}`);
  return parts.join(', ');
}

/** The metric definitions a workspace sees (its own and the tenant-wide `*` ones). */
export function MetricDefinitions(props: {
  tenant: string;
  workspace: string;
  eventNames: string[];
}) {
  const list = usePagedList<MetricDefinition>(
    'metric_definitions',
    () =>
      `${pathOf`/v1/tenants/${props.tenant}/metric-definitions`}?workspace_id=${encodeURIComponent(props.workspace)}`,
  );

  const planned = useSignal<PlannedDelete | null>(null);
  const deleting = useSignal(false);
  const deleteFailure = useSignal<string | null>(null);
  const deletePath = (definition: MetricDefinition, dryRun: boolean) =>
    `${pathOf`/v1/tenants/${props.tenant}/metric-definitions`}?${new URLSearchParams({
      metric_name: definition.metric_name,
      event_name: definition.event_name,
      workspace_id: definition.workspace_id,
      dry_run: String(dryRun),
    })}`;
  // First what the delete would leave (a dry run), then the delete once confirmed.
  const plan = async (definition: MetricDefinition) => {
    try {
      const answer = await api<{ segments: MetricDependent[] }>(
        'DELETE',
        deletePath(definition, true),
      );
      deleteFailure.value = null;
      planned.value = { definition, segments: answer.segments };
    } catch (error) {
      list.failure.value = messageOf(error);
    }
  };
  const remove = async (definition: MetricDefinition) => {
    deleting.value = true;
    try {
      await api('DELETE', deletePath(definition, false));
      planned.value = null;
      list.reload();
    } catch (error) {
      deleteFailure.value = messageOf(error);
    } finally {
      deleting.value = false;
    }
  };

  return (
    <section aria-labelledby="metrics-title">
      <h2 id="metrics-title">Metric definitions</h2>
      <Alert message={list.failure.value} />
      {list.rows.value?.length === 0 && <p>No metric definitions yet.</p>}
      <Table
        columns={[
          'Metric',
          'Event',
          'Kind',
          'Options',
          'Workspace',
          'Display name',
          canWrite.value && 'Actions',
        ]}
      >
        {(list.rows.value ?? []).map((definition) => (
          <tr
            key={JSON.stringify([
              definition.metric_name,
              definition.event_name,
              definition.workspace_id,
            ])}
          >
            <th scope="row">{definition.metric_name}</th>
            <td>{definition.event_name}</td>
            <td>{definition.value_kind}</td>
            <td>{optionsOf(definition)}</td>
            <td>{definition.workspace_id === '*' ? 'every workspace' : definition.workspace_id}</td>
            <td>{definition.display_name ?? ''}</td>
            {canWrite.value && (
              <td>
                {definition.computed_for_segments ? (
                  // A behaviour metric goes with the last segment comparing its behaviour.
                  `Computed for segments ${definition.computed_for_segments.join(', ')}`
                ) : (
                  <RowAction
                    label={`Delete metric ${definition.metric_name} of ${definition.event_name}`}
                    onClick={() => plan(definition)}
                  >
                    Delete
                  </RowAction>
                )}
              </td>
            )}
          </tr>
        ))}
      </Table>
      <ShowMore list={list} what="metric definitions" />
      {planned.value && (
        <ConfirmDialog
          title={`Delete metric ${planned.value.definition.metric_name} of ${planned.value.definition.event_name}?`}
          confirmLabel={`Delete metric ${planned.value.definition.metric_name}`}
          busy={deleting.value}
          failure={deleteFailure.value}
          onConfirm={() => planned.value && remove(planned.value.definition)}
          onClose={() => {
            planned.value = null;
          }}
        >
          <MetricDependents planned={planned.value} />
        </ConfirmDialog>
      )}
      {canWrite.value && (
        <CreateMetric tenant={props.tenant} eventNames={props.eventNames} onDone={list.reload} />
      )}
    </section>
  );
}

interface Draft {
  metric_name: string;
  event_name: string;
  value_kind: string;
  value_path: string;
  aggregation: string;
  keep: string;
  window_days: string;
  workspace_id: string;
  display_name: string;
  description: string;
}

const EMPTY: Draft = {
  metric_name: '',
  event_name: '',
  value_kind: 'count',
  value_path: '',
  aggregation: '',
  keep: '',
  window_days: '',
  workspace_id: '*',
  display_name: '',
  description: '',
};

/** The body as the user wrote it: blank fields are left out, numbers sent as numbers. */
function bodyOf(draft: Draft): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(draft) as [keyof Draft, string][]) {
    const text = value.trim();
    if (text === '') continue;
    body[key] = key === 'keep' || key === 'window_days' ? Number(text) : text;
  }
  return body;
}

function CreateMetric(props: { tenant: string; eventNames: string[]; onDone: () => void }) {
  const draft = useSignal<Draft>({ ...EMPTY, event_name: props.eventNames[0] ?? '' });
  const form = useFormReasons();
  const reasons = form.reasons.value;
  const set = (key: keyof Draft) => (event: Event) => {
    draft.value = { ...draft.value, [key]: inputValue(event) };
  };
  const eventName = draft.value.event_name || props.eventNames[0] || '';

  const submit = async (event: Event) => {
    event.preventDefault();
    const created = await form.submit(() =>
      api(
        'PUT',
        pathOf`/v1/tenants/${props.tenant}/metric-definitions`,
        bodyOf({ ...draft.value, event_name: eventName }),
      ),
    );
    if (!created) return;
    draft.value = { ...EMPTY, event_name: eventName };
    props.onDone();
  };

  const text = (key: keyof Draft, label: string, hint?: string, numeric = false) => (
    <TextField
      id={`metric-${key}`}
      label={label}
      numeric={numeric}
      {...boundTo(draft, key, reasons)}
      {...(hint ? { hint } : {})}
    />
  );

  return (
    <form class="stack" onSubmit={submit} aria-labelledby="create-metric-title">
      <h3 id="create-metric-title">Create a metric</h3>
      {text('metric_name', 'Metric name', 'Lowercase letters, digits and _')}
      <Field id="metric-event_name" label="Event" reason={reasons.get('event_name')}>
        {(described) => (
          <select {...described} value={eventName} onChange={set('event_name')}>
            <Options values={props.eventNames} />
          </select>
        )}
      </Field>
      <Field id="metric-value_kind" label="Value kind" reason={reasons.get('value_kind')}>
        {(described) => (
          <select {...described} value={draft.value.value_kind} onChange={set('value_kind')}>
            <Options values={VALUE_KINDS} />
          </select>
        )}
      </Field>
      {text('value_path', 'Value path', 'For property kinds, such as properties.total')}
      <Field
        id="metric-aggregation"
        label="Aggregation"
        hint="For property_string only"
        reason={reasons.get('aggregation')}
      >
        {(described) => (
          <select {...described} value={draft.value.aggregation} onChange={set('aggregation')}>
            <option value="">none</option>
            <Options values={AGGREGATIONS} />
          </select>
        )}
      </Field>
      {text('keep', 'Keep', 'How many recent values, 1 to 10 (aggregation recent)', true)}
      {text('window_days', 'Window in days', '1 to 730 (count and property_number)', true)}
      {text('workspace_id', 'Workspace', '* for every workspace of the tenant')}
      {text('display_name', 'Display name')}
      <Field id="metric-description" label="Description" reason={reasons.get('description')}>
        {(described) => (
          <textarea {...described} value={draft.value.description} onInput={set('description')} />
        )}
      </Field>
      <Alert message={form.failure.value} />
      <button type="submit">Create metric</button>
    </form>
  );
}
