import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { MissingStatementError } from '../../src/errors.js';
import { isDataFault } from '../../src/ingest/isolate.js';
import { sql } from '../../src/store/sql-files.js';

describe('named statements', () => {
  it('takes a statement missing from sql/ for a broken installation, which ingest never quarantines lines for', () => {
    let failure: unknown;
    try {
      sql('ingest_no_such_statement');
    } catch (error) {
      failure = error;
    }
    expect(failure).toBeInstanceOf(MissingStatementError);
    expect((failure as Error).message).toContain('ingest_no_such_statement');
    expect(isDataFault(failure)).toBe(false);
    expect(isDataFault(new Error('Conversion Error: could not convert string'))).toBe(true);
  });

  it('takes a transaction an earlier failure aborted for a fault of the machine, not of the lines', async () => {
    const connection = await (await DuckDBInstance.create(':memory:')).connect();
    await connection.run('BEGIN');
    await connection.run("SELECT 'not a number'::INTEGER").catch(() => undefined);
    const aborted = await connection.run('SELECT 1').then(
      () => null,
      (error: unknown) => error,
    );
    connection.closeSync();
    expect((aborted as Error).message).toContain('Current transaction is aborted');
    expect(isDataFault(aborted)).toBe(false);
  });
});
