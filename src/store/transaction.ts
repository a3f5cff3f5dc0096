import type { DuckDBConnection } from '@duckdb/node-api';
import { Session } from './session.js';

/** What the store runs for a caller, on a session of the connection it chose. */
export type Work<T> = (session: Session) => Promise<T>;

/** `work` in one transaction on `connection`, rolled back if it throws. */
export async function transaction<T>(connection: DuckDBConnection, work: Work<T>): Promise<T> {
  await connection.run('BEGIN TRANSACTION');
  try {
    const result = await work(new Session(connection));
    await connection.run('COMMIT');
    return result;
  } catch (error) {
    // A COMMIT that failed was rolled back by DuckDB already, and an invalidated database
    // refuses the ROLLBACK too: its "no transaction is active" would hide the cause.
    await connection.run('ROLLBACK').catch(() => undefined);
    throw error;
  }
}
