import { z } from 'zod';
import { type FieldIssue, ValidationError } from '../errors.js';
import type { MetricShape } from '../metrics/shapes.js';

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

const OPS_BY_SHAPE: Record<MetricShape, readonly string[]> = {
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'exists'],
  string: ['eq', 'ne', 'in', 'not_in', 'contains', 'exists'],
  list: ['eq', 'ne', 'in', 'not_in', 'contains', 'exists'],
};

export type Comparison =
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

  constructor(private readonly shapes: ReadonlyMap<string, MetricShape>) {}

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

  private parseComparison(node: object, path: string): Predicate | null {
    this.comparisons += 1;
    if (this.comparisons > MAX_PREDICATE_COMPARISONS)
      return this.fail(path, `more than ${MAX_PREDICATE_COMPARISONS} comparisons in one predicate`);
    const shape = comparisonShape.safeParse(node);
    if (!shape.success) {
      const [issue] = shape.error.issues;
      const where = issue && issue.path.length > 0 ? `${path}.${issue.path.join('.')}` : path;
      return this.fail(
        where,
        issue?.code === 'unrecognized_keys'
          ? `unexpected key ${issue.keys.join(', ')}; a predicate is {metric, op, value} or one of all, any, not`
          : (issue?.message ?? 'invalid comparison'),
      );
    }
    const { metric, op, value } = shape.data;
    const metricShape = this.shapes.get(metric);
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
    if (Array.isArray(checked.data)) {
      this.listValues += checked.data.length;
      if (this.listValues > MAX_PREDICATE_LIST_VALUES)
        return this.fail(
          `${path}.value`,
          `more than ${MAX_PREDICATE_LIST_VALUES} list values in one predicate (all in and not_in lists together)`,
        );
    }
    return { kind: 'cmp', metric, shape: metricShape, op, value: checked.data } as Comparison;
  }

  private fail(path: string, message: string): null {
    this.issues.push({ path, message });
    return null;
  }
}

/**
 * Validates a predicate (design §13) against the metrics known in a workspace and returns its
 * tree; throws a ValidationError whose path points at the fault (`predicate.all[1].op`).
 */
export function parsePredicate(
  raw: unknown,
  shapes: ReadonlyMap<string, MetricShape>,
  path = 'predicate',
): Predicate {
  const parser = new PredicateParser(shapes);
  const predicate = parser.parse(raw, path, 1);
  if (!predicate) throw new ValidationError(parser.issues);
  return predicate;
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
