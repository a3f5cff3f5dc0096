/**
 * The rule a builder edits, and the predicate (design §13, src/segments/predicate.ts) it stands
 * for. Values stay as typed text until the predicate is built, so a half-typed number is kept
 * on screen rather than lost; an incomplete rule builds no predicate and asks for no preview.
 */

export type MetricShape = 'number' | 'string' | 'list';

/** The operators src/segments/predicate.ts takes for each shape, in the order offered. */
export const OPS_BY_SHAPE: Record<MetricShape, readonly string[]> = {
  number: ['gte', 'gt', 'eq', 'ne', 'lt', 'lte', 'exists'],
  string: ['eq', 'ne', 'contains', 'in', 'not_in', 'exists'],
  list: ['contains', 'in', 'not_in', 'eq', 'ne', 'exists'],
};

export const OP_LABELS: Record<string, string> = {
  eq: 'is',
  ne: 'is not',
  gt: 'is more than',
  gte: 'is at least',
  lt: 'is less than',
  lte: 'is at most',
  contains: 'contains',
  in: 'is one of',
  not_in: 'is none of',
  exists: 'has a value',
};

export interface Condition {
  type: 'condition';
  id: number;
  negated: boolean;
  metric: string;
  op: string;
  /** As typed: a number, a string, one string per line (in, not_in), or yes/no (exists). */
  text: string;
}

/** How many times a behaviour is done: at least, at most or exactly N. */
export const QUANTIFIERS = [
  ['gte', 'at least'],
  ['lte', 'at most'],
  ['eq', 'exactly'],
] as const;

/** The operators of a `where` on an event's property (design §13, COND), in the order offered. */
export const PROPERTY_OPS = [
  'eq',
  'ne',
  'gt',
  'gte',
  'lt',
  'lte',
  'contains',
  'in',
  'not_in',
  'exists',
];

export const PROPERTY_OP_LABELS: Record<string, string> = {
  ...OP_LABELS,
  exists: 'is set',
};

/** One condition on the events' properties: `properties.<field> <op> <value>`. */
export interface PropertyFilter {
  id: number;
  /** The field under `properties.`, as typed (`total`, `address.city`). */
  field: string;
  op: string;
  text: string;
}

/**
 * "did / did not do [event] [at least | at most | exactly] N times [in the last D days | ever]
 * [where …]": a count of one event type's events, the builder's first kind of condition.
 */
export interface EventCondition {
  type: 'event';
  id: number;
  negated: boolean;
  did: boolean;
  event: string;
  quantifier: 'gte' | 'lte' | 'eq';
  times: string;
  /** Days back, as typed; empty for ever. */
  days: string;
  where: PropertyFilter[];
}

export interface Group {
  type: 'group';
  id: number;
  negated: boolean;
  combinator: 'all' | 'any';
  children: RuleNode[];
}

export type RuleNode = Condition | EventCondition | Group;

let lastId = 0;
const nextId = () => {
  lastId += 1;
  return lastId;
};

export function newCondition(metric = '', shape: MetricShape = 'number'): Condition {
  const op = OPS_BY_SHAPE[shape][0] as string;
  return { type: 'condition', id: nextId(), negated: false, metric, op, text: '' };
}

export function newEventCondition(event = ''): EventCondition {
  return {
    type: 'event',
    id: nextId(),
    negated: false,
    did: true,
    event,
    quantifier: 'gte',
    times: '1',
    days: '',
    where: [],
  };
}

export function newPropertyFilter(): PropertyFilter {
  return { id: nextId(), field: '', op: 'eq', text: '' };
}

export function newGroup(combinator: 'all' | 'any', children: RuleNode[] = []): Group {
  return { type: 'group', id: nextId(), negated: false, combinator, children };
}

/** The tree with the node `id` replaced by what `change` makes of it (null removes it). */
export function updateNode(
  node: RuleNode,
  id: number,
  change: (node: RuleNode) => RuleNode | null,
): RuleNode | null {
  if (node.id === id) return change(node);
  if (node.type !== 'group') return node;
  const children: RuleNode[] = [];
  for (const child of node.children) {
    const updated = updateNode(child, id, change);
    if (updated) children.push(updated);
  }
  return { ...node, children };
}

export function listValues(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
}

/** The comparison's value as the API takes it, or why there is none yet. */
export function conditionValue(
  condition: Condition,
  shape: MetricShape,
): { value: unknown } | { missing: string } {
  if (condition.op === 'exists') return { value: condition.text !== 'no' };
  if (condition.op === 'in' || condition.op === 'not_in') {
    const values = listValues(condition.text);
    return values.length > 0 ? { value: values } : { missing: 'enter at least one value' };
  }
  if (shape === 'number') {
    const number = Number(condition.text);
    return condition.text.trim() === '' || !Number.isFinite(number)
      ? { missing: 'enter a number' }
      : { value: number };
  }
  return { value: condition.text };
}

/**
 * A property filter's value: a number for the comparisons of numbers; for `is` and `is not` a
 * number or true/false when the text reads as one, else the text (docs/console.md).
 */
export function propertyValue(filter: PropertyFilter): { value: unknown } | { missing: string } {
  const text = filter.text.trim();
  if (filter.op === 'exists') return { value: filter.text !== 'no' };
  if (filter.op === 'in' || filter.op === 'not_in') {
    const values = listValues(filter.text);
    return values.length > 0 ? { value: values } : { missing: 'enter at least one value' };
  }
  const number = Number(text);
  const numeric = text !== '' && Number.isFinite(number);
  if (['gt', 'gte', 'lt', 'lte'].includes(filter.op))
    return numeric ? { value: number } : { missing: 'enter a number' };
  if (filter.op === 'contains') return { value: filter.text };
  if (numeric) return { value: number };
  if (text === 'true' || text === 'false') return { value: text === 'true' };
  return { value: filter.text };
}

/** The event condition as the API takes it, its paths beside it, or null while incomplete. */
function eventPredicate(node: EventCondition, path: string, paths: Map<string, number>) {
  if (node.event === '') return null;
  const times = Number(node.times);
  if (node.did && (node.times.trim() === '' || !Number.isFinite(times))) return null;
  const days = Number(node.days);
  if (node.days.trim() !== '' && !Number.isFinite(days)) return null;
  const where: unknown[] = [];
  for (const [index, filter] of node.where.entries()) {
    const value = propertyValue(filter);
    if (filter.field.trim() === '' || 'missing' in value) return null;
    const at = node.where.length === 1 ? `${path}.where` : `${path}.where.all[${index}]`;
    for (const field of ['', '.path', '.op', '.value']) paths.set(`${at}${field}`, node.id);
    where.push({ path: `properties.${filter.field.trim()}`, op: filter.op, value: value.value });
  }
  for (const field of ['event', 'op', 'value', 'within_days', 'where'])
    paths.set(`${path}.${field}`, node.id);
  return {
    event: node.event,
    op: node.did ? node.quantifier : 'eq',
    value: node.did ? times : 0,
    ...(node.days.trim() === '' ? {} : { within_days: days }),
    ...(where.length === 0 ? {} : { where: where.length === 1 ? where[0] : { all: where } }),
  };
}

export interface BuiltPredicate {
  predicate: unknown;
  /** The API's paths (`predicate.all[1].not`) to the node they name, to show a 422 beside it. */
  paths: Map<string, number>;
}

/** The predicate the rule stands for, or null while a part of it is incomplete. */
export function buildPredicate(
  root: RuleNode,
  shapes: ReadonlyMap<string, MetricShape>,
): BuiltPredicate | null {
  const paths = new Map<string, number>();
  const build = (node: RuleNode, path: string): unknown | null => {
    paths.set(path, node.id);
    const inner = node.negated ? `${path}.not` : path;
    if (node.negated) paths.set(inner, node.id);
    let built: unknown;
    if (node.type === 'group') {
      if (node.children.length === 0) return null;
      const parts: unknown[] = [];
      for (const [index, child] of node.children.entries()) {
        const part = build(child, `${inner}.${node.combinator}[${index}]`);
        if (part === null) return null;
        parts.push(part);
      }
      built = { [node.combinator]: parts };
    } else if (node.type === 'event') {
      built = eventPredicate(node, inner, paths);
      if (built === null) return null;
    } else {
      const shape = shapes.get(node.metric);
      if (!shape) return null;
      const value = conditionValue(node, shape);
      if ('missing' in value) return null;
      for (const field of ['metric', 'op', 'value']) paths.set(`${inner}.${field}`, node.id);
      built = { metric: node.metric, op: node.op, value: value.value };
    }
    return node.negated ? { not: built } : built;
  };
  const predicate = build(root, 'predicate');
  return predicate === null ? null : { predicate, paths };
}

function describeValue(value: unknown): string {
  if (Array.isArray(value)) return value.map((item) => JSON.stringify(item)).join(', ');
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

const QUANTIFIER_LABELS: Record<string, string> = {
  gte: 'at least',
  lte: 'at most',
  eq: 'exactly',
  gt: 'more than',
  lt: 'fewer than',
  ne: 'other than',
};

function describeWhere(where: unknown): string {
  if (typeof where !== 'object' || where === null) return JSON.stringify(where);
  const record = where as Record<string, unknown>;
  if (Array.isArray(record.all)) return record.all.map(describeWhere).join(' and ');
  const { path, op, value } = record;
  if (op === 'exists') return `${String(path)} ${value === false ? 'is not set' : 'is set'}`;
  return `${String(path)} ${OP_LABELS[String(op)] ?? String(op)} ${describeValue(value)}`;
}

/** "did order_placed at least 2 times in the last 30 days where properties.total is more than 50". */
function describeEvent(record: Record<string, unknown>): string {
  const { event, op, value } = record;
  const days =
    typeof record.within_days === 'number' ? ` in the last ${record.within_days} days` : '';
  const where = 'where' in record ? ` where ${describeWhere(record.where)}` : '';
  let what: string;
  if (typeof record.sum === 'string')
    what = `sum of ${record.sum} over ${String(event)}${days} ${OP_LABELS[String(op)] ?? op} ${describeValue(value)}`;
  else if (typeof record.latest === 'string')
    what = `latest ${record.latest} of ${String(event)} ${OP_LABELS[String(op)] ?? op} ${describeValue(value)}`;
  else if (op === 'eq' && value === 0) what = `did not do ${String(event)}${days}`;
  else
    what = `did ${String(event)} ${QUANTIFIER_LABELS[String(op)] ?? op} ${describeValue(value)} ${value === 1 ? 'time' : 'times'}${days}`;
  return `${what}${where}`;
}

/**
 * A stored predicate in words, one line per comparison, indented by depth: what the segment page
 * shows. Anything it does not recognise is shown as its JSON, never dropped.
 */
export function describePredicate(predicate: unknown, depth = 0): string[] {
  const indent = '  '.repeat(depth);
  if (typeof predicate !== 'object' || predicate === null || Array.isArray(predicate))
    return [`${indent}${JSON.stringify(predicate)}`];
  const record = predicate as Record<string, unknown>;
  for (const combinator of ['all', 'any'] as const) {
    const list = record[combinator];
    if (Array.isArray(list))
      return [
        `${indent}${combinator === 'all' ? 'All of:' : 'Any of:'}`,
        ...list.flatMap((part) => describePredicate(part, depth + 1)),
      ];
  }
  if ('not' in record) return [`${indent}None of:`, ...describePredicate(record.not, depth + 1)];
  if (typeof record.event === 'string') return [`${indent}${describeEvent(record)}`];
  const { metric, op, value } = record;
  if (typeof metric === 'string' && typeof op === 'string') {
    if (op === 'exists')
      return [`${indent}${metric} ${value === false ? 'has no value' : 'has a value'}`];
    return [`${indent}${metric} ${OP_LABELS[op] ?? op} ${describeValue(value)}`];
  }
  return [`${indent}${JSON.stringify(predicate)}`];
}

/** A stored value as the builder's field holds it: yes/no, one per line, or the text. */
function textOf(op: string, value: unknown): string {
  if (op === 'exists') return value === false ? 'no' : 'yes';
  return Array.isArray(value) ? value.join('\n') : String(value);
}

/**
 * The rule a stored predicate stands for, to start a new segment from a saved one (segments are
 * create-only); null for anything the builder cannot show.
 */
export function ruleFromPredicate(predicate: unknown): RuleNode | null {
  if (typeof predicate !== 'object' || predicate === null || Array.isArray(predicate)) return null;
  const record = predicate as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1 && keys[0] === 'not') {
    const inner = ruleFromPredicate(record.not);
    return inner && !inner.negated ? { ...inner, negated: true } : null;
  }
  for (const combinator of ['all', 'any'] as const)
    if (keys.length === 1 && Array.isArray(record[combinator])) {
      const children = (record[combinator] as unknown[]).map(ruleFromPredicate);
      return children.every((child) => child !== null)
        ? newGroup(combinator, children as RuleNode[])
        : null;
    }
  if (typeof record.event === 'string') return eventFromPredicate(record);
  const { metric, op, value } = record;
  if (typeof metric !== 'string' || typeof op !== 'string') return null;
  const text = textOf(op, value);
  return { type: 'condition', id: nextId(), negated: false, metric, op, text };
}

function filterFromPredicate(condition: unknown): PropertyFilter | null {
  if (typeof condition !== 'object' || condition === null) return null;
  const { path, op, value } = condition as Record<string, unknown>;
  if (typeof path !== 'string' || !path.startsWith('properties.') || typeof op !== 'string')
    return null;
  const text = textOf(op, value);
  return { id: nextId(), field: path.slice('properties.'.length), op, text };
}

/** A stored count condition as the builder shows it; the sum and latest forms it does not. */
function eventFromPredicate(record: Record<string, unknown>): EventCondition | null {
  const { event, op, value, within_days: days, where } = record;
  if ('sum' in record || 'latest' in record || typeof event !== 'string') return null;
  if (typeof value !== 'number' || !['gte', 'lte', 'eq'].includes(String(op))) return null;
  const conditions =
    where === undefined
      ? []
      : Array.isArray((where as { all?: unknown }).all)
        ? ((where as { all: unknown[] }).all as unknown[])
        : [where];
  const filters = conditions.map(filterFromPredicate);
  if (filters.some((filter) => filter === null)) return null;
  const did = !(op === 'eq' && value === 0);
  return {
    type: 'event',
    id: nextId(),
    negated: false,
    did,
    event,
    quantifier: did ? (op as EventCondition['quantifier']) : 'gte',
    times: did ? String(value) : '1',
    days: typeof days === 'number' ? String(days) : '',
    where: filters as PropertyFilter[],
  };
}
