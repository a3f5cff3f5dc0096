import type { MetricShape } from '../metrics/shapes.js';
import type { Params } from '../store/session.js';
import type { Comparison, Predicate } from './predicate.js';

/**
 * A predicate as SQL fragments to drop into a statement from `sql/segments.sql`. Every metric
 * name and value is a bound parameter; the fragments themselves come only from this file.
 */
export interface CompiledPredicate {
  /** One column per metric, read from `profile_metric_vectors`: `… AS m0, … AS m1`. */
  columns: string;
  /** A boolean expression over the pivoted columns that is never NULL. */
  condition: string;
  params: Params;
}

const VALUE_MAP: Record<MetricShape, string> = {
  number: 'number_values',
  string: 'string_values',
  list: 'list_values',
};

const NUMBER_OPERATORS = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const;

class Compiler {
  readonly params: Params = {};
  private readonly columnOf = new Map<string, string>();
  private readonly columnShapes: [string, MetricShape][] = [];
  private nextValue = 0;

  column(metric: string, shape: MetricShape): string {
    let column = this.columnOf.get(metric);
    if (!column) {
      column = `m${this.columnOf.size}`;
      this.columnOf.set(metric, column);
      this.columnShapes.push([column, shape]);
      this.params[`${column}_name`] = metric;
    }
    return column;
  }

  bind(value: string | number): string {
    const name = `v${this.nextValue++}`;
    this.params[name] = value;
    return `$${name}`;
  }

  bindList(values: string[]): string {
    return values.map((value) => this.bind(value)).join(', ');
  }

  condition(node: Predicate): string {
    switch (node.kind) {
      case 'all':
        return `(${node.of.map((part) => this.condition(part)).join(' AND ')})`;
      case 'any':
        return `(${node.of.map((part) => this.condition(part)).join(' OR ')})`;
      case 'not':
        return `(NOT ${this.condition(node.of)})`;
      case 'cmp':
        return `coalesce(${this.comparison(node)}, false)`;
    }
  }

  /** A count or sum that a profile lacks is 0 (design §13); a missing string or list is NULL. */
  private comparison(node: Comparison): string {
    const column = this.column(node.metric, node.shape);
    if (node.op === 'exists') return node.value ? `${column} IS NOT NULL` : `${column} IS NULL`;
    if (node.shape === 'number') {
      return `coalesce(${column}, 0) ${NUMBER_OPERATORS[node.op as keyof typeof NUMBER_OPERATORS]} ${this.bind(node.value as number)}`;
    }
    const subject = node.shape === 'list' ? `${column}[1]` : column;
    switch (node.op) {
      case 'eq':
        return `${subject} = ${this.bind(node.value as string)}`;
      case 'ne':
        return `${subject} IS DISTINCT FROM ${this.bind(node.value as string)}`;
      case 'contains':
        return node.shape === 'list'
          ? `list_contains(${column}, ${this.bind(node.value as string)})`
          : `contains(${column}, ${this.bind(node.value as string)})`;
      case 'in':
        return node.shape === 'list'
          ? `list_has_any(${column}, [${this.bindList(node.value as string[])}])`
          : `${column} IN (${this.bindList(node.value as string[])})`;
      case 'not_in':
        return node.shape === 'list'
          ? `NOT coalesce(list_has_any(${column}, [${this.bindList(node.value as string[])}]), false)`
          : `${column} IS NULL OR ${column} NOT IN (${this.bindList(node.value as string[])})`;
    }
  }

  valueColumns(): string {
    return this.columnShapes
      .map(([column, shape]) => `${VALUE_MAP[shape]}[$${column}_name] AS ${column}`)
      .join(',\n    ');
  }
}

export function compilePredicate(predicate: Predicate): CompiledPredicate {
  const compiler = new Compiler();
  const condition = compiler.condition(predicate);
  return {
    columns: compiler.valueColumns(),
    condition,
    params: compiler.params,
  };
}

export interface CompiledSegmentSet {
  /** Value columns shared by every segment of the set, as in `CompiledPredicate`. */
  columns: string;
  /** A BIGINT whose bit i is set when the profile matches the i-th segment. */
  mask: string;
  params: Params;
}

/** Bits of a signed BIGINT that a membership mask uses. */
export const MAX_SEGMENTS_PER_MASK = 62;

/**
 * Up to 62 segments of one workspace in one pass: each profile gets a bit mask of
 * the segments it matches, compared with a mask of the segments it is in, so only profiles whose
 * membership changes are expanded into rows.
 */
export function compileSegmentSet(segments: { predicate: Predicate }[]): CompiledSegmentSet {
  const compiler = new Compiler();
  if (segments.length > MAX_SEGMENTS_PER_MASK) {
    throw new Error(`at most ${MAX_SEGMENTS_PER_MASK} segments fit one membership mask`);
  }
  const bits = segments.map(
    ({ predicate }, position) =>
      `(CASE WHEN ${compiler.condition(predicate)} THEN ${(1n << BigInt(position)).toString()} ELSE 0 END)::BIGINT`,
  );
  return {
    columns: compiler.valueColumns(),
    mask: bits.join('\n    | '),
    params: compiler.params,
  };
}

/** Puts compiled fragments into the `{{name}}` slots of a statement from `sql/`. */
export function fillSlots(template: string, fragments: Record<string, string>): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_, name: string) => {
    const fragment = fragments[name];
    if (fragment === undefined) throw new Error(`no fragment for SQL slot {{${name}}}`);
    return fragment;
  });
}
