import { DuckDBInstance } from '@duckdb/node-api';

/** The names of the tables in a closed DuckDB file (a snapshot, say), opened read-only. */
export async function tablesOf(path: string): Promise<string[]> {
  const instance = await DuckDBInstance.create(path, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  const reader = await connection.runAndReadAll(
    'SELECT table_name FROM duckdb_tables() ORDER BY table_name',
  );
  const names = reader.getRowObjectsJson().map((row) => String(row.table_name));
  connection.closeSync();
  instance.closeSync();
  return names;
}
