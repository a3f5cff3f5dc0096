import { z } from 'zod';
import { type FieldIssue, ValidationError } from '../errors.js';
import { propertyPathSchema } from '../ids.js';
import type { MetricShape } from '../metrics/shapes.js';
import { type Behaviour, behaviourOf, type PropertyCondition } from './behaviour.js';

export const MAX_PREDICATE_DEPTH = 8;
/**
 * Comparisons (`{metric, op, value}` nodes) in one predicate. Each is a column expression every
 * profile in scope goes through at every evaluation, so the count bounds the cost of a preview
 * and of each ingest batch in the segment's workspace.
 */
export const MAX_PREDICATE_COMPARISONS = 100;
/**
 * Strings in all the `in`/`not_in` lists of one predicate together. Each is a bound parameter and
 * a value compared per profile, so they are budgeted across the predicate like comparisons.
 */
export const MAX_PREDICATE_LIST_VALUES = 1000;
/**
 * Metric values are DOUBLE (counts as well as sums), whose integers are exact up to 2^53: a bound
 * beyond it cannot tell two counts apart, and numbers past 2^63 could not even be bound as BIGINT.
 */
export const MAX_PREDICATE_NUMBER = Number.MAX_SAFE_INTEGER;
/**
 * Distinct behaviours (event conditions) in one rule. Each is a metric definition that every
 * ingest batch applies to the workspace's events while the segment exists.
 */
export const MAX_RULE_BEHAVIOURS = 10;
/** How far back an event condition may look, as a metric window (design §12–§13). */
export const MAX_WITHIN_DAYS = 730;

const OPS_BY_SHAPE: Record<MetricShape, readonly string[]> = {
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'exists'],
  string: ['eq', 'ne', 'in', 'not_in', 'contains', 'exists'],
  list: ['eq', 'ne', 'in', 'not_in', 'contains', 'exists'],
};

/** A comparison of a metric, or of a behaviour (an event condition) computed as one. */
export type Comparison = ComparisonOfValue & { behaviour?: Behaviour };

type ComparisonOfValue =
  | { kind: 'cmp'; metric: string; shape: MetricShape; op: 'exists'; value: boolean }
  | {
      kind: 'cmp';
      metric: string;
      shape: 'number';
      op: 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
      value: number;
    }
  | {
      kind: 'cmp';
      metric: string;
      shape: 'string' | 'list';
      op: 'eq' | 'ne' | 'contains';
      value: string;
    }
  | { kind: 'cmp'; metric: string; shape: 'string' | 'list'; op: 'in' | 'not_in'; value: string[] };

export type Predicate =
  | Comparison
  | { kind: 'all'; of: Predicate[] }
  | { kind: 'any'; of: Predicate[] }
  | { kind: 'not'; of: Predicate };

/** What a rule may name: the metrics a workspace can compare and the event types of its tenant. */
export interface RuleScope {
  shapes: ReadonlyMap<string, MetricShape>;
  eventTypes: ReadonlySet<string>;
}

const EVENT_CONDITION_KEYS = new Set([
  'event',
  'sum',
  'latest',
  'op',
  'value',
  'within_days',
  'where',
]);
const NUMBER_OPS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte'];
const STRING_OPS = ['eq', 'ne', 'in', 'not_in', 'contains', 'exists'];
const PROPERTY_OPS = [...NUMBER_OPS, 'in', 'not_in', 'contains', 'exists'];

const comparisonShape = z
  .object({ metric: z.string().min(1), op: z.string().min(1), value: z.unknown() })
  .strict();

const valueSchemas = {
  boolean: z.boolean({ error: 'must be a boolean' }),
  number: z
    .number({ error: 'must be a number' })
    .min(-MAX_PREDICATE_NUMBER, {
      error: `must be between -${MAX_PREDICATE_NUMBER} and ${MAX_PREDICATE_NUMBER} (2^53 - 1), the range metric values hold exactly`,
    })
    .max(MAX_PREDICATE_NUMBER, {
      error: `must be between -${MAX_PREDICATE_NUMBER} and ${MAX_PREDICATE_NUMBER} (2^53 - 1), the range metric values hold exactly`,
    }),
  string: z.string({ error: 'must be a string' }).max(1000),
  strings: z
    .array(z.string().max(1000), { error: 'must be an array of strings' })
    .min(1)
    .max(MAX_PREDICATE_LIST_VALUES),
};

/** A property condition's value: its operator says which types it compares (design §13, COND). */
function propertyValueSchema(op: string): z.ZodType<PropertyCondition['value']> {
  if (op === 'exists') return valueSchemas.boolean;
  if (op === 'in' || op === 'not_in') return valueSchemas.strings;
  if (op === 'contains') return valueSchemas.string;
  if (op === 'eq' || op === 'ne')
    return z.union([valueSchemas.number, valueSchemas.string, valueSchemas.boolean], {
      error: 'must be a number, a string or a boolean',
    });
  return valueSchemas.number;
}

function valueSchemaFor(shape: MetricShape, op: string): z.ZodType {
  if (op === 'exists') return valueSchemas.boolean;
  if (shape === 'number') return valueSchemas.number;
  return op === 'in' || op === 'not_in' ? valueSchemas.strings : valueSchemas.string;
}

/**
 * Walks a predicate and stops at its first fault, so the work is bounded by the limits above
 * whatever the size of the body: at most MAX_PREDICATE_COMPARISONS comparisons are checked.
 */
class PredicateParser {
  readonly issues: FieldIssue[] = [];
  private comparisons = 0;
  private listValues = 0;
  private readonly behaviours = new Set<string>();

  constructor(private readonly scope: RuleScope) {}

  parse(node: unknown, path: string, depth: number): Predicate | null {
    if (depth > MAX_PREDICATE_DEPTH)
      return this.fail(path, `nesting deeper than ${MAX_PREDICATE_DEPTH} levels`);
    if (typeof node !== 'object' || node === null || Array.isArray(node))
      return this.fail(path, 'must be an object');
    const keys = Object.keys(node);
    const record = node as Record<string, unknown>;
    if (keys.length === 1 && (keys[0] === 'all' || keys[0] === 'any'))
      return this.parseList(keys[0], record[keys[0]], path, depth);
    if (keys.length === 1 && keys[0] === 'not') {
      const inner = this.parse(record.not, `${path}.not`, depth + 1);
      return inner && { kind: 'not', of: inner };
    }
    if (Object.hasOwn(record, 'event')) return this.parseEventCondition(record, path, depth);
    return this.parseComparison(node, path);
  }

  private parseList(
    kind: 'all' | 'any',
    list: unknown,
    path: string,
    depth: number,
  ): Predicate | null {
    if (!Array.isArray(list) || list.length === 0)
      return this.fail(`${path}.${kind}`, 'must be a non-empty array of predicates');
    const parts: Predicate[] = [];
    for (const [index, item] of list.entries()) {
      const part = this.parse(item, `${path}.${kind}[${index}]`, depth + 1);
      if (!part) return null;
      parts.push(part);
    }
    return { kind, of: parts };
  }

  private countComparison(path: string): boolean {
    this.comparisons += 1;
    if (this.comparisons <= MAX_PREDICATE_COMPARISONS) return true;
    this.fail(path, `more than ${MAX_PREDICATE_COMPARISONS} comparisons in one predicate`);
    return false;
  }

  private countListValues(path: string, value: unknown): boolean {
    if (!Array.isArray(value)) return true;
    this.listValues += value.length;
    if (this.listValues <= MAX_PREDICATE_LIST_VALUES) return true;
    this.fail(
      path,
      `more than ${MAX_PREDICATE_LIST_VALUES} list values in one predicate (all in and not_in lists together)`,
    );
    return false;
  }

  /**
   * `{"event", "op", "value", "within_days"?, "where"?}` and its `sum` and `latest` forms
   * (design §13): a comparison of the behaviour they measure, computed as a metric.
   */
  private parseEventCondition(
    record: Record<string, unknown>,
    path: string,
    depth: number,
  ): Predicate | null {
    if (!this.countComparison(path)) return null;
    const unexpected = Object.keys(record).find((key) => !EVENT_CONDITION_KEYS.has(key));
    if (unexpected !== undefined)
      return this.fail(
        path,
        `unexpected key ${unexpected}; an event condition is {event, op, value} with sum or latest, within_days and where`,
      );
    const event = record.event;
    if (typeof event !== 'string' || !this.scope.eventTypes.has(event))
      return this.fail(
        `${path}.event`,
        typeof event === 'string'
          ? `event type ${event} is not registered`
          : 'must be the name of a registered event type',
      );
    if (Object.hasOwn(record, 'sum') && Object.hasOwn(record, 'latest'))
      return this.fail(path, 'an event condition takes sum or latest, not both');
    const measure = Object.hasOwn(record, 'sum')
      ? 'sum'
      : Object.hasOwn(record, 'latest')
        ? 'latest'
        : 'count';
    let measuredPath: string | null = null;
    if (measure !== 'count') {
      const checked = propertyPathSchema.safeParse(record[measure]);
      if (!checked.success)
        return this.fail(`${path}.${measure}`, checked.error.issues[0]?.message ?? 'invalid path');
      measuredPath = checked.data;
    }
    let withinDays: number | null = null;
    if (Object.hasOwn(record, 'within_days')) {
      if (measure === 'latest')
        return this.fail(`${path}.within_days`, 'is allowed only for a count or a sum');
      const days = record.within_days;
      if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > MAX_WITHIN_DAYS)
        return this.fail(
          `${path}.within_days`,
          `must be a whole number of days from 1 to ${MAX_WITHIN_DAYS}`,
        );
      withinDays = days;
    }
    const shape: MetricShape = measure === 'latest' ? 'string' : 'number';
    const ops = shape === 'number' ? NUMBER_OPS : STRING_OPS;
    if (typeof record.op !== 'string' || !ops.includes(record.op))
      return this.fail(
        `${path}.op`,
        `must be one of ${ops.join(', ')} for ${measure === 'count' ? 'a count' : `a ${measure}`}`,
      );
    const checked = valueSchemaFor(shape, record.op).safeParse(record.value);
    if (!checked.success)
      return this.fail(`${path}.value`, checked.error.issues[0]?.message ?? 'invalid value');
    if (!this.countListValues(`${path}.value`, checked.data)) return null;
    const where: PropertyCondition[] = [];
    if (
      Object.hasOwn(record, 'where') &&
      !this.parseWhere(record.where, `${path}.where`, depth + 1, where)
    )
      return null;
    const behaviour = behaviourOf({ event, measure, path: measuredPath, withinDays, where });
    this.behaviours.add(behaviour.metricName);
    if (this.behaviours.size > MAX_RULE_BEHAVIOURS)
      return this.fail(
        path,
        `more than ${MAX_RULE_BEHAVIOURS} different event conditions in one rule`,
      );
    return {
      kind: 'cmp',
      metric: behaviour.metricName,
      shape,
      op: record.op,
      value: checked.data,
      behaviour,
    } as Comparison;
  }

  /** `{"path", "op", "value"}` or `{"all": [COND, …]}`, gathered into one list that must all hold. */
  private parseWhere(
    node: unknown,
    path: string,
    depth: number,
    into: PropertyCondition[],
  ): boolean {
    if (depth > MAX_PREDICATE_DEPTH) {
      this.fail(path, `nesting deeper than ${MAX_PREDICATE_DEPTH} levels`);
      return false;
    }
    if (typeof node !== 'object' || node === null || Array.isArray(node)) {
      this.fail(path, 'must be an object: {path, op, value} or {all: […]}');
      return false;
    }
    const record = node as Record<string, unknown>;
    const keys = Object.keys(record);
    if (keys.length === 1 && keys[0] === 'all') {
      if (!Array.isArray(record.all) || record.all.length === 0) {
        this.fail(`${path}.all`, 'must be a non-empty array of conditions');
        return false;
      }
      return record.all.every((item, index) =>
        this.parseWhere(item, `${path}.all[${index}]`, depth + 1, into),
      );
    }
    const condition = this.parsePropertyCondition(record, path);
    if (condition) into.push(condition);
    return condition !== null;
  }

  private parsePropertyCondition(
    record: Record<string, unknown>,
    path: string,
  ): PropertyCondition | null {
    if (!this.countComparison(path)) return null;
    const unexpected = Object.keys(record).find((key) => !['path', 'op', 'value'].includes(key));
    if (unexpected !== undefined)
      return this.fail(
        path,
        `unexpected key ${unexpected}; a condition is {path, op, value} or {all: […]}`,
      );
    const property = propertyPathSchema.safeParse(record.path);
    if (!property.success)
      return this.fail(`${path}.path`, property.error.issues[0]?.message ?? 'invalid path');
    const op = record.op;
    if (typeof op !== 'string' || !PROPERTY_OPS.includes(op))
      return this.fail(`${path}.op`, `must be one of ${PROPERTY_OPS.join(', ')}`);
    const value = propertyValueSchema(op).safeParse(record.value);
    if (!value.success)
      return this.fail(`${path}.value`, value.error.issues[0]?.message ?? 'invalid value');
    if (!this.countListValues(`${path}.value`, value.data)) return null;
    return { path: property.data, op, value: value.data };
  }

  private parseComparison(node: object, path: string): Predicate | null {
    if (!this.countComparison(path)) return null;
    const shape = comparisonShape.safeParse(node);
    if (!shape.success) {
      const [issue] = shape.error.issues;
      const where = issue && issue.path.length > 0 ? `${path}.${issue.path.join('.')}` : path;
      return this.fail(
        where,
        issue?.code === 'unrecognized_keys'
          ? `unexpected key ${issue.keys.join(', ')}; a predicate is {metric, op, value}, {event, op, value} or one of all, any, not`
          : (issue?.message ?? 'invalid comparison'),
      );
    }
    const { metric, op, value } = shape.data;
    const metricShape = this.scope.shapes.get(metric);
    if (!metricShape) return this.fail(`${path}.metric`, `unknown metric ${metric}`);
    if (!OPS_BY_SHAPE[metricShape].includes(op)) {
      return this.fail(
        `${path}.op`,
        `operator ${op} does not apply to ${metricShape} metric ${metric}; use one of ${OPS_BY_SHAPE[metricShape].join(', ')}`,
      );
    }
    const checked = valueSchemaFor(metricShape, op).safeParse(value);
    if (!checked.success)
      return this.fail(`${path}.value`, checked.error.issues[0]?.message ?? 'invalid value');
    if (!this.countListValues(`${path}.value`, checked.data)) return null;
    return { kind: 'cmp', metric, shape: metricShape, op, value: checked.data } as Comparison;
  }

  private fail(path: string, message: string): null {
    this.issues.push({ path, message });
    return null;
  }
}

/**
 * Validates a predicate (design §13) against the metrics known in a workspace and the tenant's
 * event types and returns its tree; throws a ValidationError whose path points at the fault (`predicate.all[1].op`).
 */
export function parsePredicate(raw: unknown, scope: RuleScope, path = 'predicate'): Predicate {
  const parser = new PredicateParser(scope);
  const predicate = parser.parse(raw, path, 1);
  if (!predicate) throw new ValidationError(parser.issues);
  return predicate;
}

/** The behaviours a parsed rule compares, each once. */
export function behavioursIn(predicate: Predicate): Behaviour[] {
  const found = new Map<string, Behaviour>();
  const visit = (node: Predicate): void => {
    if (node.kind === 'cmp') {
      if (node.behaviour) found.set(node.behaviour.metricName, node.behaviour);
    } else if (node.kind === 'not') visit(node.of);
    else for (const part of node.of) visit(part);
  };
  visit(predicate);
  return [...found.values()];
}

/**
 * The metric names a stored rule compares, read from its JSON as written (a rule is stored once
 * it passed `parsePredicate`, so only comparisons carry a `metric`).
 */
export function metricsNamedIn(rule: unknown): Set<string> {
  const names = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) {
      for (const item of node) visit(item);
      return;
    }
    if (typeof node !== 'object' || node === null) return;
    const record = node as Record<string, unknown>;
    if (typeof record.metric === 'string') names.add(record.metric);
    for (const key of ['all', 'any', 'not'] as const)
      if (Object.hasOwn(record, key)) visit(record[key]);
  };
  visit(rule);
  return names;
}
