import { eventConditionsOf, jsonPathOf } from '../metrics/event-filter.js';
import type { MetricShape } from '../metrics/shapes.js';
import type { Params } from '../store/session.js';
import { fillSlots, sql } from '../store/sql-files.js';
import type { Behaviour } from './behaviour.js';
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
  /**
   * For a preview, the behaviours whose values are not computed yet, read from stored events:
   * common table expressions (`b0 AS (…),`) and their joins to the rows of values.
   */
  behaviours: string;
  behaviourJoins: string;
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
  private readonly columnSources: [string, string][] = [];
  private readonly fromEvents: string[] = [];
  private nextValue = 0;

  /** `fromEvents`: the behaviours (by metric name) to read from stored events, not from values. */
  constructor(
    private readonly readFromEvents: ReadonlySet<string> = new Set(),
    private readonly today: string | null = null,
  ) {}

  column(metric: string, shape: MetricShape, behaviour?: Behaviour): string {
    let column = this.columnOf.get(metric);
    if (!column) {
      column = `m${this.columnOf.size}`;
      this.columnOf.set(metric, column);
      if (behaviour && this.readFromEvents.has(metric)) {
        this.columnSources.push([column, `${this.eventsSource(behaviour)}.value`]);
      } else {
        this.columnSources.push([column, `${VALUE_MAP[shape]}[$${column}_name]`]);
        this.params[`${column}_name`] = metric;
      }
    }
    return column;
  }

  /** A behaviour's values per profile, computed from the stored events (sql preview_behaviour_values). */
  private eventsSource(behaviour: Behaviour): string {
    const source = `b${this.fromEvents.length}`;
    const paths = [
      ...(behaviour.path === null ? [] : [jsonPathOf(behaviour.path)]),
      ...behaviour.where.map((condition) => jsonPathOf(condition.path)),
    ];
    const firstWhere = behaviour.path === null ? 1 : 2;
    const conditions = eventConditionsOf(behaviour.where).map((condition, index) => {
      this.params[`${source}_c${index}`] = JSON.stringify(condition);
      return `event_property_matches(v[${firstWhere + index}], CAST(CAST($${source}_c${index} AS JSON) AS event_condition))`;
    });
    this.params[`${source}_event`] = behaviour.event;
    this.params[`${source}_window`] = behaviour.withinDays;
    if (paths.length > 0) this.params[`${source}_paths`] = JSON.stringify(paths);
    this.params.today = this.today;
    this.fromEvents.push(
      fillSlots(sql('preview_behaviour_values'), {
        b: source,
        measure: sql(`preview_measure_${behaviour.measure}`),
        values:
          paths.length === 0
            ? 'NULL::JSON[]'
            : `json_extract(e.properties, CAST($${source}_paths AS JSON)::VARCHAR[])`,
        conditions: conditions.length === 0 ? 'true' : conditions.join(' AND '),
      }),
    );
    return source;
  }

  behaviours(): string {
    return this.fromEvents.map((statement) => `${statement},\n`).join('');
  }

  behaviourJoins(): string {
    return this.fromEvents
      .map((_, index) => `\n  LEFT JOIN b${index} ON b${index}.profile_id = v.profile_id`)
      .join('');
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
    const column = this.column(node.metric, node.shape, node.behaviour);
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
    return this.columnSources.map(([column, source]) => `${source} AS ${column}`).join(',\n    ');
  }
}

/**
 * A predicate over the rows of values; for a preview, the behaviours named in `readFromEvents`
 * are computed from the stored events as of `today`, as their metrics would be once backfilled.
 */
export function compilePredicate(
  predicate: Predicate,
  fromEvents: { behaviours: ReadonlySet<string>; today: string } | null = null,
): CompiledPredicate {
  const compiler = new Compiler(fromEvents?.behaviours, fromEvents?.today ?? null);
  const condition = compiler.condition(predicate);
  return {
    columns: compiler.valueColumns(),
    condition,
    behaviours: compiler.behaviours(),
    behaviourJoins: compiler.behaviourJoins(),
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
