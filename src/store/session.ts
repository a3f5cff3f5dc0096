import type { DuckDBConnection, DuckDBValue } from '@duckdb/node-api';
import { OutOfMemoryError } from '../errors.js';
import { traced } from '../trace.js';
import { sql } from './sql-files.js';

export type Params = Record<string, DuckDBValue>;
export type Row = Record<string, unknown>;
/** A value the appender takes: VARCHAR, INTEGER, DOUBLE, BLOB or NULL. */
export type AppendValue = string | number | Uint8Array | null;

function plain(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(plain);
  return value;
}

/** DuckDB's out-of-memory failure as ours; any other error passes unchanged. */
function translated(error: unknown): unknown {
  const message = error instanceof Error ? error.message : '';
  if (!message.startsWith('Out of Memory Error')) return error;
  return new OutOfMemoryError(/\(([^)]*used)\)/.exec(message)?.[1] ?? 'over memory_limit');
}

function plainRow(row: Record<string, unknown>): Row {
  const out: Row = {};
  for (const [key, value] of Object.entries(row)) out[key] = plain(value);
  return out;
}

/**
 * Runs named statements from `sql/` on one connection. BIGINT comes back as number and
 * timestamps as ISO 8601 strings, so rows can be answered as JSON as they are.
 */
export class Session {
  constructor(private readonly connection: DuckDBConnection) {}

  async all<T = Row>(name: string, params?: Params): Promise<T[]> {
    return traced(name, () => this.allText<T>(sql(name), params));
  }

  /**
   * For large results: the statement answers one JSON text (`to_json(list(…))`), parsed here.
   * Parsing 100k rows as JSON costs half of converting them to row objects.
   */
  async json<T>(name: string, params?: Params): Promise<T> {
    return traced(name, async () => {
      const reader = await this.readAll(sql(name), params);
      return JSON.parse(String(reader.getRows()[0]?.[0] ?? 'null')) as T;
    });
  }

  async one<T = Row>(name: string, params?: Params): Promise<T | null> {
    const [row] = await this.all<T>(name, params);
    return row ?? null;
  }

  /** Runs a statement and returns how many rows it changed. */
  async run(name: string, params?: Params): Promise<number> {
    return traced(name, () => this.runText(sql(name), params));
  }

  /** For statements assembled by a compiler from fixed fragments (values are still bound). */
  async allText<T = Row>(text: string, params?: Params): Promise<T[]> {
    const reader = await this.readAll(text, params);
    return reader.getRowObjectsJS().map((row) => plainRow(row) as T);
  }

  private async readAll(text: string, params?: Params) {
    try {
      return await this.connection.runAndReadAll(text, params);
    } catch (error) {
      throw translated(error);
    }
  }

  /**
   * For results too large to hold as rows or JSON (millions of rows): reads the statement's
   * UINTEGER columns chunk by chunk as it streams, `each` taking one chunk's columns (a null as 0).
   */
  async scanUint32(
    name: string,
    params: Params | undefined,
    each: (columns: Uint32Array[], rows: number) => void,
  ): Promise<void> {
    await traced(name, async () => {
      const result = await this.connection.stream(sql(name), params).catch((error) => {
        throw translated(error);
      });
      for (;;) {
        const chunk = await result.fetchChunk();
        const rows = chunk?.rowCount ?? 0;
        if (!chunk || rows === 0) return;
        const columns: Uint32Array[] = [];
        for (let column = 0; column < chunk.columnCount; column += 1) {
          const vector = chunk.getColumnVector(column);
          const values = new Uint32Array(rows);
          for (let row = 0; row < rows; row += 1) values[row] = Number(vector.getItem(row) ?? 0);
          columns.push(values);
        }
        each(columns, rows);
      }
    });
  }

  async runText(text: string, params?: Params): Promise<number> {
    try {
      const result = await this.connection.run(text, params);
      return result.rowsChanged;
    } catch (error) {
      throw translated(error);
    }
  }

  /**
   * Appends rows to a temporary table of this connection, in the running transaction: the bulk
   * path from JS into SQL (the appender is far cheaper than binding rows as JSON).
   */
  async appendTemporary(table: string, rows: Iterable<readonly AppendValue[]>): Promise<void> {
    await traced(`append ${table}`, () => this.append(table, rows));
  }

  private async append(table: string, rows: Iterable<readonly AppendValue[]>): Promise<void> {
    const appender = await this.connection.createAppender(table, 'main', 'temp');
    for (const row of rows) {
      for (const value of row) {
        if (value === null) appender.appendNull();
        else if (typeof value === 'string') appender.appendVarchar(value);
        else if (typeof value === 'number') {
          if (Number.isInteger(value)) appender.appendInteger(value);
          else appender.appendDouble(value);
        } else appender.appendBlob(value);
      }
      appender.endRow();
    }
    appender.closeSync();
  }
}
