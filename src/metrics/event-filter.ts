/** A condition of a `where` on an event's property, as a rule writes it (design §13, COND). */
export interface PropertyCondition {
  path: string;
  op: string;
  value: number | string | boolean | string[];
}

/** A DuckDB `event_condition` (migration 022) as JSON, every key present as its cast requires. */
interface EventConditionRow {
  json_path: string;
  op: string;
  number: number | null;
  text: string | null;
  texts: string[] | null;
  flag: boolean | null;
}

const PROPERTIES_PREFIX = 'properties.';

/** A validated `properties.a.b` path as the JSON path `$.a.b` (its fields are identifier-like). */
export function jsonPathOf(path: string): string {
  return `$.${path.slice(PROPERTIES_PREFIX.length)}`;
}

/**
 * The conditions every event a definition reads must meet, as the `event_condition[]` its
 * `event_filter` holds (JSON); null for none, when the definition reads every event of its type.
 */
export function eventFilterOf(where: PropertyCondition[]): string | null {
  return where.length === 0 ? null : JSON.stringify(eventConditionsOf(where));
}

/** Each condition as an `event_condition`, for SQL that takes them one at a time. */
export function eventConditionsOf(where: PropertyCondition[]): EventConditionRow[] {
  return where.map(({ path, op, value }) => ({
    json_path: jsonPathOf(path),
    op,
    number: typeof value === 'number' ? value : null,
    text: typeof value === 'string' ? value : null,
    texts: Array.isArray(value) ? value : null,
    flag: typeof value === 'boolean' ? value : null,
  }));
}

/** A stored `event_filter` as the rule wrote it: `properties.<field>`, op and value. */
export function conditionsOf(eventFilter: string | null): PropertyCondition[] | null {
  if (eventFilter === null) return null;
  return (JSON.parse(eventFilter) as EventConditionRow[]).map((row) => ({
    path: `${PROPERTIES_PREFIX}${row.json_path.slice(2)}`,
    op: row.op,
    value: (row.number ?? row.text ?? row.texts ?? row.flag) as PropertyCondition['value'],
  }));
}
