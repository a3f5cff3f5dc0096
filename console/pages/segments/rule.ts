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

export interface Group {
  type: 'group';
  id: number;
  negated: boolean;
  combinator: 'all' | 'any';
  children: RuleNode[];
}

export type RuleNode = Condition | Group;

let lastId = 0;
const nextId = () => {
  lastId += 1;
  return lastId;
};

export function newCondition(metric = '', shape: MetricShape = 'number'): Condition {
  const op = OPS_BY_SHAPE[shape][0] as string;
  return { type: 'condition', id: nextId(), negated: false, metric, op, text: '' };
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
  if (node.type === 'condition') return node;
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
  const { metric, op, value } = record;
  if (typeof metric === 'string' && typeof op === 'string') {
    if (op === 'exists')
      return [`${indent}${metric} ${value === false ? 'has no value' : 'has a value'}`];
    return [`${indent}${metric} ${OP_LABELS[op] ?? op} ${describeValue(value)}`];
  }
  return [`${indent}${JSON.stringify(predicate)}`];
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
  const { metric, op, value } = record;
  if (typeof metric !== 'string' || typeof op !== 'string') return null;
  const text =
    op === 'exists'
      ? value === false
        ? 'no'
        : 'yes'
      : Array.isArray(value)
        ? value.join('\n')
        : String(value);
  return { type: 'condition', id: nextId(), negated: false, metric, op, text };
}
