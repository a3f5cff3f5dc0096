import type { Signal } from '@preact/signals';
import type { WorkspaceMetric } from './data.js';
import {
  type Condition,
  type EventCondition,
  type Group,
  newCondition,
  newEventCondition,
  newGroup,
  newPropertyFilter,
  OP_LABELS,
  OPS_BY_SHAPE,
  PROPERTY_OP_LABELS,
  PROPERTY_OPS,
  type PropertyFilter,
  QUANTIFIERS,
  type RuleNode,
  updateNode,
} from './rule.js';

interface EditorProps {
  root: Signal<RuleNode>;
  metrics: WorkspaceMetric[];
  /** The tenant's event types, which behaviours name. */
  events: string[];
  /** The API's reason for a node, by node id (a 422 of the preview or the save). */
  reasons: Map<number, string>;
}

/** A condition of the rule and its `place`. */
interface ConditionProps {
  condition: Condition;
  place: string;
  props: EditorProps;
}

function change(root: Signal<RuleNode>, id: number, edit: (node: RuleNode) => RuleNode | null) {
  root.value = updateNode(root.value, id, edit) ?? root.value;
}

function metricOf(metrics: WorkspaceMetric[], name: string) {
  return metrics.find((metric) => metric.name === name);
}

/** The "not" in front of a condition or a group, which negates it. */
function NotToggle({ root, node }: { root: Signal<RuleNode>; node: RuleNode }) {
  return (
    <label class="inline">
      <input
        type="checkbox"
        checked={node.negated}
        onChange={(event) =>
          change(root, node.id, (current) => ({
            ...current,
            negated: (event.target as HTMLInputElement).checked,
          }))
        }
      />
      not
    </label>
  );
}

/** A value as typed: yes/no for `exists`, one per line for `in`/`not_in`, else one field. */
function ValueField(props: {
  op: string;
  text: string;
  label: string;
  numeric: boolean;
  set: (text: string) => void;
}) {
  if (props.op === 'exists')
    return (
      <select
        aria-label={props.label}
        value={props.text === 'no' ? 'no' : 'yes'}
        onChange={(event) => props.set((event.target as HTMLSelectElement).value)}
      >
        <option value="yes">yes</option>
        <option value="no">no</option>
      </select>
    );
  if (props.op === 'in' || props.op === 'not_in')
    return (
      <textarea
        aria-label={`${props.label}, one per line`}
        rows={2}
        value={props.text}
        onInput={(event) => props.set((event.target as HTMLTextAreaElement).value)}
      />
    );
  return (
    <input
      aria-label={props.label}
      type={props.numeric ? 'number' : 'text'}
      step="any"
      value={props.text}
      onInput={(event) => props.set((event.target as HTMLInputElement).value)}
    />
  );
}

function ValueInput({ condition, place, props }: ConditionProps) {
  return (
    <ValueField
      op={condition.op}
      text={condition.text}
      label={`Value of condition ${place}`}
      numeric={metricOf(props.metrics, condition.metric)?.shape === 'number'}
      set={(text) => change(props.root, condition.id, (node) => ({ ...node, text }) as Condition)}
    />
  );
}

/** A condition's Remove, and the API's reason for it beside it. */
function RemoveCondition({
  root,
  node,
  place,
}: {
  root: Signal<RuleNode>;
  node: RuleNode;
  place: string;
}) {
  return (
    <button
      type="button"
      class="quiet"
      aria-label={`Remove condition ${place}`}
      onClick={() => change(root, node.id, () => null)}
    >
      Remove
    </button>
  );
}

function Reason({ id, reason }: { id: string; reason: string | undefined }) {
  return reason ? (
    <p id={id} class="error field-reason">
      {reason}
    </p>
  ) : null;
}

/** `place` names a node by its position (`2.1`: the first in the second of the rule), as users count. */
function ConditionRow({ condition, place, props }: ConditionProps) {
  const metric = metricOf(props.metrics, condition.metric);
  const ops = OPS_BY_SHAPE[metric?.shape ?? 'number'];
  const reason = props.reasons.get(condition.id);
  const reasonId = `reason-${condition.id}`;
  return (
    <li class="condition" aria-describedby={reason ? reasonId : undefined}>
      <NotToggle root={props.root} node={condition} />
      <select
        aria-label={`Metric of condition ${place}`}
        value={condition.metric}
        onChange={(event) => {
          const name = (event.target as HTMLSelectElement).value;
          const shape = metricOf(props.metrics, name)?.shape ?? 'number';
          change(props.root, condition.id, (node) => {
            const kept = OPS_BY_SHAPE[shape].includes((node as Condition).op);
            return {
              ...(node as Condition),
              metric: name,
              op: kept ? (node as Condition).op : (OPS_BY_SHAPE[shape][0] as string),
            };
          });
        }}
      >
        {props.metrics.map((option) => (
          <option key={option.name} value={option.name}>
            {option.label}
          </option>
        ))}
      </select>
      <select
        aria-label={`Operator of condition ${place}`}
        value={condition.op}
        onChange={(event) =>
          change(props.root, condition.id, (node) => ({
            ...(node as Condition),
            op: (event.target as HTMLSelectElement).value,
            text: '',
          }))
        }
      >
        {ops.map((op) => (
          <option key={op} value={op}>
            {OP_LABELS[op] ?? op}
          </option>
        ))}
      </select>
      <ValueInput condition={condition} place={place} props={props} />
      <RemoveCondition root={props.root} node={condition} place={place} />
      <Reason id={reasonId} reason={reason} />
    </li>
  );
}

/** One `where` of a behaviour: `properties.<field> <op> <value>`. */
function PropertyFilterRow({
  condition,
  filter,
  place,
  root,
}: {
  condition: EventCondition;
  filter: PropertyFilter;
  place: string;
  root: Signal<RuleNode>;
}) {
  const set = (patch: Partial<PropertyFilter>) =>
    change(root, condition.id, (node) => ({
      ...(node as EventCondition),
      where: (node as EventCondition).where.map((item) =>
        item.id === filter.id ? { ...item, ...patch } : item,
      ),
    }));
  const label = `of property filter ${place}`;
  return (
    <li class="property-filter">
      <span>where properties.</span>
      <input
        aria-label={`Field ${label}`}
        value={filter.field}
        placeholder="field"
        onInput={(event) => set({ field: (event.target as HTMLInputElement).value })}
      />
      <select
        aria-label={`Operator ${label}`}
        value={filter.op}
        onChange={(event) => set({ op: (event.target as HTMLSelectElement).value, text: '' })}
      >
        {PROPERTY_OPS.map((op) => (
          <option key={op} value={op}>
            {PROPERTY_OP_LABELS[op] ?? op}
          </option>
        ))}
      </select>
      <ValueField
        op={filter.op}
        text={filter.text}
        label={`Value ${label}`}
        numeric={false}
        set={(text) => set({ text })}
      />
      <button
        type="button"
        class="quiet"
        aria-label={`Remove property filter ${place}`}
        onClick={() =>
          change(root, condition.id, (node) => ({
            ...(node as EventCondition),
            where: (node as EventCondition).where.filter((item) => item.id !== filter.id),
          }))
        }
      >
        Remove
      </button>
    </li>
  );
}

/** "did / did not do [event] [at least | at most | exactly] N times [in the last D days] [where …]". */
function EventConditionRow({
  condition,
  place,
  props,
}: {
  condition: EventCondition;
  place: string;
  props: EditorProps;
}) {
  const reason = props.reasons.get(condition.id);
  const reasonId = `reason-${condition.id}`;
  const set = (patch: Partial<EventCondition>) =>
    change(props.root, condition.id, (node) => ({ ...(node as EventCondition), ...patch }));
  return (
    <li class="condition behaviour" aria-describedby={reason ? reasonId : undefined}>
      <NotToggle root={props.root} node={condition} />
      <select
        aria-label={`Did or did not, condition ${place}`}
        value={condition.did ? 'did' : 'did_not'}
        onChange={(event) => set({ did: (event.target as HTMLSelectElement).value === 'did' })}
      >
        <option value="did">did</option>
        <option value="did_not">did not do</option>
      </select>
      <select
        aria-label={`Event of condition ${place}`}
        value={condition.event}
        onChange={(event) => set({ event: (event.target as HTMLSelectElement).value })}
      >
        {props.events.map((name) => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
      {condition.did && (
        <>
          <select
            aria-label={`How many times, condition ${place}`}
            value={condition.quantifier}
            onChange={(event) =>
              set({
                quantifier: (event.target as HTMLSelectElement)
                  .value as EventCondition['quantifier'],
              })
            }
          >
            {QUANTIFIERS.map(([op, label]) => (
              <option key={op} value={op}>
                {label}
              </option>
            ))}
          </select>
          <input
            aria-label={`Times of condition ${place}`}
            type="number"
            min="0"
            step="1"
            class="short"
            value={condition.times}
            onInput={(event) => set({ times: (event.target as HTMLInputElement).value })}
          />
          <span>times</span>
        </>
      )}
      <label class="inline">
        in the last
        <input
          aria-label={`Days of condition ${place} (empty: ever)`}
          type="number"
          min="1"
          max="730"
          step="1"
          class="short"
          placeholder="ever"
          value={condition.days}
          onInput={(event) => set({ days: (event.target as HTMLInputElement).value })}
        />
        days
      </label>
      <RemoveCondition root={props.root} node={condition} place={place} />
      {condition.where.length > 0 && (
        <ul class="property-filters" aria-label={`Property filters of condition ${place}`}>
          {condition.where.map((filter, index) => (
            <PropertyFilterRow
              key={filter.id}
              condition={condition}
              filter={filter}
              place={`${place}.${index + 1}`}
              root={props.root}
            />
          ))}
        </ul>
      )}
      <button
        type="button"
        class="quiet"
        onClick={() => set({ where: [...condition.where, newPropertyFilter()] })}
      >
        Add property filter to condition {place}
      </button>
      <Reason id={reasonId} reason={reason} />
    </li>
  );
}

function GroupBox({
  group,
  place,
  props,
  depth,
}: {
  group: Group;
  place: string;
  props: EditorProps;
  depth: number;
}) {
  const reason = props.reasons.get(group.id);
  const first = props.metrics[0];
  const firstEvent = props.events[0];
  /** A new group's first condition: a behaviour where the tenant has event types. */
  const starter = (): RuleNode[] =>
    firstEvent
      ? [newEventCondition(firstEvent)]
      : first
        ? [newCondition(first.name, first.shape)]
        : [];
  const placeOf = (index: number) => (place ? `${place}.${index + 1}` : `${index + 1}`);
  const add = (node: RuleNode) =>
    change(props.root, group.id, (current) => ({
      ...(current as Group),
      children: [...(current as Group).children, node],
    }));
  return (
    <fieldset class="rule-group">
      <legend>{depth === 0 ? 'Rule' : `Group ${place}`}</legend>
      <div class="group-head">
        <NotToggle root={props.root} node={group} />
        <label class="inline">
          Match
          <select
            value={group.combinator}
            onChange={(event) =>
              change(props.root, group.id, (node) => ({
                ...(node as Group),
                combinator: (event.target as HTMLSelectElement).value as 'all' | 'any',
              }))
            }
          >
            <option value="all">all of</option>
            <option value="any">any of</option>
          </select>
        </label>
        {depth > 0 && (
          <button
            type="button"
            class="quiet"
            aria-label={`Remove group ${place}`}
            onClick={() => change(props.root, group.id, () => null)}
          >
            Remove group
          </button>
        )}
      </div>
      {group.children.length === 0 && <p class="help">Empty: add a condition or a group.</p>}
      <ul class="rule-children">
        {group.children.map((child, index) =>
          child.type === 'condition' ? (
            <ConditionRow key={child.id} condition={child} place={placeOf(index)} props={props} />
          ) : child.type === 'event' ? (
            <EventConditionRow
              key={child.id}
              condition={child}
              place={placeOf(index)}
              props={props}
            />
          ) : (
            <li key={child.id}>
              <GroupBox group={child} place={placeOf(index)} props={props} depth={depth + 1} />
            </li>
          ),
        )}
      </ul>
      <div class="group-actions">
        <button
          type="button"
          class="quiet"
          disabled={!firstEvent}
          onClick={() => add(newEventCondition(firstEvent))}
        >
          Add behaviour{depth > 0 ? ` to group ${place}` : ''}
        </button>
        <button
          type="button"
          class="quiet"
          disabled={!first}
          onClick={() => add(newCondition(first?.name, first?.shape))}
        >
          Add metric condition{depth > 0 ? ` to group ${place}` : ''}
        </button>
        {depth < 6 && (
          <button type="button" class="quiet" onClick={() => add(newGroup('any', starter()))}>
            Add group{depth > 0 ? ` to group ${place}` : ''}
          </button>
        )}
      </div>
      {reason && <p class="error field-reason">{reason}</p>}
    </fieldset>
  );
}

/** The nested all / any / not groups of a rule, edited in place. */
export function RuleEditor(props: EditorProps) {
  const root = props.root.value;
  return root.type === 'group' ? <GroupBox group={root} place="" props={props} depth={0} /> : null;
}
