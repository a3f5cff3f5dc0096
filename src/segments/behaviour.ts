import { createHash } from 'node:crypto';
import type { PropertyCondition } from '../metrics/event-filter.js';

export type { PropertyCondition };

/** What a rule's event condition measures over the events it reads (design §13, EVT). */
export type BehaviourMeasure = 'count' | 'sum' | 'latest';

/**
 * One behaviour a rule compares: which events, what of them, over how many days, and the
 * conditions each event must meet, in a canonical order, so that two rules naming the same
 * behaviour share what computes it.
 */
export interface Behaviour {
  event: string;
  measure: BehaviourMeasure;
  /** The summed or latest `properties.<field>`; null for a count. */
  path: string | null;
  /** Days back from today; null for ever. */
  withinDays: number | null;
  where: PropertyCondition[];
  /** The metric the behaviour is computed as: a name no catalog metric can take (`~` + hash). */
  metricName: string;
}

/** Prefix of the metrics computed for segments; catalog metric names start with a letter. */
export const BEHAVIOUR_METRIC_PREFIX = '~';

export function behaviourOf(
  input: Omit<Behaviour, 'metricName' | 'where'> & {
    where: PropertyCondition[];
  },
): Behaviour {
  const where = [...new Map(input.where.map((c) => [JSON.stringify(c), c])).entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, condition]) => condition);
  const identity = JSON.stringify([
    input.event,
    input.measure,
    input.path,
    input.withinDays,
    where,
  ]);
  const hash = createHash('sha256').update(identity).digest('hex').slice(0, 16);
  return { ...input, where, metricName: `${BEHAVIOUR_METRIC_PREFIX}${hash}` };
}

/** The metric definition fields a behaviour is computed with (design §12 kinds). */
export function definitionFieldsOf(behaviour: Behaviour): {
  value_kind: 'count' | 'property_number' | 'property_string';
  aggregation: 'latest' | null;
} {
  switch (behaviour.measure) {
    case 'count':
      return { value_kind: 'count', aggregation: null };
    case 'sum':
      return { value_kind: 'property_number', aggregation: null };
    case 'latest':
      return { value_kind: 'property_string', aggregation: 'latest' };
  }
}

/** The longest description kept, as for a catalog definition's `display_name`. */
const DESCRIPTION_LIMIT = 200;

/** How the metric-definitions list names a behaviour: "count of order_placed in 30 days where …". */
export function describeBehaviour(behaviour: Behaviour): string {
  const what =
    behaviour.measure === 'count'
      ? `count of ${behaviour.event}`
      : `${behaviour.measure} of ${behaviour.path} on ${behaviour.event}`;
  const when = behaviour.withinDays === null ? '' : ` in ${behaviour.withinDays} days`;
  const where =
    behaviour.where.length === 0
      ? ''
      : ` where ${behaviour.where
          .map(({ path, op, value }) => `${path} ${op} ${JSON.stringify(value)}`)
          .join(' and ')}`;
  const description = `${what}${when}${where}`;
  return description.length <= DESCRIPTION_LIMIT
    ? description
    : `${description.slice(0, DESCRIPTION_LIMIT - 1)}…`;
}
