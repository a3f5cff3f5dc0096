import type { Session } from './session.js';

declare const madeByItsStep: unique symbol;

/**
 * A temporary table a step of a transaction made, as a value. A step takes the handles of the
 * tables it reads and returns the handles of those it makes, so a step called before the step
 * that makes its input does not compile. `Name` is the table's name in the SQL that reads it;
 * `State` tells apart what a later step left of a table it changed, where a reader needs that
 * change made first. The handle keeps the session it was made in: a temporary table exists on its
 * own connection only.
 */
export interface TemporaryTable<Name extends string, State extends string = 'made'> {
  readonly name: Name;
  readonly session: Session;
  readonly [madeByItsStep]: State;
}

/** The handle of a table the calling step has just made (or changed) in `session`. */
export function temporaryTable<Name extends string, State extends string = 'made'>(
  session: Session,
  name: Name,
): TemporaryTable<Name, State> {
  return { name, session } as TemporaryTable<Name, State>;
}

/**
 * The session a step runs in: the one its input tables live in. Tables of two sessions in one
 * step would be a programming error (one of them is not visible there), so it throws.
 */
export function sessionOf(
  ...tables: [TemporaryTable<string, string>, ...TemporaryTable<string, string>[]]
): Session {
  const [first, ...rest] = tables;
  const other = rest.find((table) => table.session !== first.session);
  if (other) throw new Error(`${other.name} belongs to another session than ${first.name}`);
  return first.session;
}
