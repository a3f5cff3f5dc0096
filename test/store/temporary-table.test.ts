import { describe, expect, expectTypeOf, it } from 'vitest';
import type { Session } from '../../src/store/session.js';
import { sessionOf, type TemporaryTable, temporaryTable } from '../../src/store/temporary-table.js';

// Sessions are only compared here, never used.
const one = {} as Session;
const other = {} as Session;

describe('temporary table handles', () => {
  it('give a step the session its input tables live in', () => {
    const staged = temporaryTable(one, 'ingest_checked');
    const candidates = temporaryTable(one, 'ingest_candidates');
    expect(sessionOf(staged, candidates)).toBe(one);
  });

  it('refuse a step whose input tables live in two sessions', () => {
    const staged = temporaryTable(one, 'ingest_checked');
    const foreign = temporaryTable(other, 'ingest_candidates');
    expect(() => sessionOf(staged, foreign)).toThrow(
      'ingest_candidates belongs to another session than ingest_checked',
    );
  });

  it('tell tables apart by name and by what a step left of them, at compile time', () => {
    expectTypeOf<TemporaryTable<'ingest_sets'>>().not.toExtend<
      TemporaryTable<'ingest_event_sets'>
    >();
    expectTypeOf<TemporaryTable<'ingest_event_keys'>>().not.toExtend<
      TemporaryTable<'ingest_event_keys', 'first_seen'>
    >();
    // Only temporaryTable makes a handle: a plain object with the same fields is not one.
    expectTypeOf({ name: 'ingest_checked' as const, session: one }).not.toExtend<
      TemporaryTable<'ingest_checked'>
    >();
  });
});
