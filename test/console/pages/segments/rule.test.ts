import { describe, expect, it } from 'vitest';
import {
  buildPredicate,
  type Condition,
  describePredicate,
  type MetricShape,
  newCondition,
  newGroup,
  ruleFromPredicate,
  updateNode,
} from '../../../../console/pages/segments/rule.js';

const SHAPES = new Map<string, MetricShape>([
  ['orders', 'number'],
  ['plan', 'string'],
  ['categories', 'list'],
]);

function condition(metric: string, op: string, text: string, negated = false): Condition {
  return { ...newCondition(metric, SHAPES.get(metric)), op, text, negated };
}

describe('the builder rule (console/pages/segments/rule.ts)', () => {
  it('builds the nested predicate with values typed by shape, and the API path of each node', () => {
    const orders = condition('orders', 'gte', '2.5');
    const plan = condition('plan', 'in', 'gold\n\n silver \n');
    const categories = condition('categories', 'exists', 'no', true);
    const any = { ...newGroup('any', [plan, categories]), negated: true };
    const built = buildPredicate(newGroup('all', [orders, any]), SHAPES);
    expect(built?.predicate).toEqual({
      all: [
        { metric: 'orders', op: 'gte', value: 2.5 },
        {
          not: {
            any: [
              { metric: 'plan', op: 'in', value: ['gold', 'silver'] },
              { not: { metric: 'categories', op: 'exists', value: false } },
            ],
          },
        },
      ],
    });
    expect(built?.paths.get('predicate.all[0].value')).toBe(orders.id);
    expect(built?.paths.get('predicate.all[1].not.any[0].value')).toBe(plan.id);
    expect(built?.paths.get('predicate.all[1].not.any[1].not.op')).toBe(categories.id);
    expect(built?.paths.get('predicate.all[1]')).toBe(any.id);
  });

  it('builds nothing while a part is incomplete: no number, no list item, an empty group, an unknown metric', () => {
    for (const part of [
      condition('orders', 'gt', ''),
      condition('orders', 'gt', '12abc'),
      condition('plan', 'not_in', '\n \n'),
      newGroup('any'),
      condition('gone', 'eq', 'x'),
    ])
      expect(buildPredicate(newGroup('all', [part]), SHAPES)).toBeNull();
    // An empty string is a value a string metric can be compared with.
    expect(buildPredicate(condition('plan', 'eq', ''), SHAPES)?.predicate).toEqual({
      metric: 'plan',
      op: 'eq',
      value: '',
    });
  });

  it('edits and removes nodes by id without touching the others', () => {
    const kept = condition('orders', 'gte', '1');
    const removed = condition('plan', 'eq', 'gold');
    const root = newGroup('all', [kept, newGroup('any', [removed])]);
    const edited = updateNode(root, removed.id, () => null);
    expect(buildPredicate(edited ?? root, SHAPES)).toBeNull();
    const changed = updateNode(root, kept.id, (node) => ({ ...node, text: '3' }) as Condition);
    expect(buildPredicate(changed ?? root, SHAPES)?.predicate).toEqual({
      all: [
        { metric: 'orders', op: 'gte', value: 3 },
        { any: [{ metric: 'plan', op: 'eq', value: 'gold' }] },
      ],
    });
  });

  it('describes a stored predicate in words, and shows what it does not know as JSON', () => {
    expect(
      describePredicate({
        any: [
          { metric: 'plan', op: 'in', value: ['gold', 'a "b"'] },
          { not: { metric: 'orders', op: 'exists', value: true } },
          { metric: 'orders', op: 'between', value: 1 },
          { odd: true },
        ],
      }),
    ).toEqual([
      'Any of:',
      '  plan is one of "gold", "a \\"b\\""',
      '  None of:',
      '    orders has a value',
      '  orders between 1',
      '  {"odd":true}',
    ]);
  });
});

describe('ruleFromPredicate', () => {
  it('gives back a rule that builds the same predicate, for a new segment started from a saved one', () => {
    const predicate = {
      all: [
        { metric: 'orders', op: 'gte', value: 2.5 },
        {
          not: {
            any: [
              { metric: 'plan', op: 'in', value: ['gold', 'silver'] },
              { not: { metric: 'categories', op: 'exists', value: false } },
            ],
          },
        },
      ],
    };
    const rule = ruleFromPredicate(predicate);
    expect(rule && buildPredicate(rule, SHAPES)?.predicate).toEqual(predicate);
  });

  it('refuses what the builder cannot show', () => {
    for (const odd of [
      null,
      [],
      { odd: true },
      { not: { not: { metric: 'orders', op: 'gt', value: 1 } } },
    ])
      expect(ruleFromPredicate(odd)).toBeNull();
  });
});
