import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Context } from '../context.js';
import { PRIVATE_DIR_MODE } from '../store/file-modes.js';
import type { Session } from '../store/session.js';
import { sqlStringLiteral } from '../store/sql-files.js';
import { announceAccessChange } from '../tenancy/access-changes.js';
import { busStagingDir } from './stream-source.js';

/**
 * A tenant's rows as a move copies them (docs/cluster-design.md §5): every table with a
 * `tenant_id` column, each as one Parquet file of that tenant's rows. The statements name a table
 * and a file, which no parameter can, so they are built here: the table names come from the
 * database's own catalog and must look like ours, the paths are made here, and the tenant id is
 * always a bound parameter.
 */
export interface TenantTable {
  table_name: string;
  /** (U)HUGEINT columns: Parquet would write them as DOUBLE, so they travel as text. */
  wide_columns: string[];
}

const TABLE_NAME = /^[a-z_][a-z0-9_]*$/;

const identifier = (name: string) => {
  if (!TABLE_NAME.test(name)) throw new Error(`not a cds table or column name: ${name}`);
  return `"${name}"`;
};

export async function tenantTables(session: Session): Promise<TenantTable[]> {
  const tables = await session.all<TenantTable>('bus_tenant_tables');
  for (const table of tables) identifier(table.table_name);
  return tables;
}

export async function tenantTable(context: Context, name: string): Promise<TenantTable | null> {
  const tables = await context.store.read(tenantTables);
  return tables.find((table) => table.table_name === name) ?? null;
}

/** A new file in the staging folder for one table of a move. */
export async function moveFile(context: Context, table: string): Promise<string> {
  const dir = busStagingDir(context);
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  return join(
    dir,
    `move-${randomBytes(6).toString('hex')}-${identifier(table).slice(1, -1)}.parquet`,
  );
}

/** Writes the tenant's rows of one table to `path` as Parquet. */
export async function exportTenantTable(
  context: Context,
  tenantId: string,
  table: TenantTable,
  path: string,
): Promise<void> {
  const replace =
    table.wide_columns.length === 0
      ? ''
      : ` REPLACE (${table.wide_columns.map((column) => `${identifier(column)}::VARCHAR AS ${identifier(column)}`).join(', ')})`;
  await context.store.read((session) =>
    session.runText(
      `COPY (SELECT *${replace} FROM ${identifier(table.table_name)} WHERE tenant_id = $tenant_id) TO ${sqlStringLiteral(path)} (FORMAT parquet)`,
      { tenant_id: tenantId },
    ),
  );
}

/**
 * Replaces whatever this database holds of the tenant by the copied rows, every table in one
 * transaction (its `bus_offsets` with them): a crash leaves the old state whole, and a copy done
 * again is the same copy.
 */
export async function importTenantRows(
  context: Context,
  tenantId: string,
  files: ReadonlyMap<string, string>,
): Promise<void> {
  await context.store.write(
    async (session) => {
      for (const table of await tenantTables(session)) {
        const path = files.get(table.table_name);
        if (path === undefined)
          throw new Error(`the copy of ${tenantId} has no ${table.table_name}`);
        const name = identifier(table.table_name);
        await session.runText(`DELETE FROM ${name} WHERE tenant_id = $tenant_id`, {
          tenant_id: tenantId,
        });
        await session.runText(`INSERT INTO ${name} BY NAME SELECT * FROM read_parquet($path)`, {
          path,
        });
      }
    },
    { large: true },
  );
}

/** Deletes every row of the tenant, in one transaction: another shard owns it now. */
export async function deleteTenantRows(context: Context, tenantId: string): Promise<void> {
  await context.store.write(
    async (session) => {
      for (const table of await tenantTables(session))
        await session.runText(
          `DELETE FROM ${identifier(table.table_name)} WHERE tenant_id = $tenant_id`,
          {
            tenant_id: tenantId,
          },
        );
    },
    { large: true },
  );
  announceAccessChange(context.store, tenantId);
}

/** Whether this database holds the tenant. */
export async function holdsTenant(context: Context, tenantId: string): Promise<boolean> {
  const row = await context.store.read((session) =>
    session.one<{ n: number }>('bus_holds_tenant', { tenant_id: tenantId }),
  );
  return (row?.n ?? 0) > 0;
}

/** The last sequence the database holds of the tenant, or null. */
export async function offsetOf(context: Context, tenantId: string): Promise<number | null> {
  const row = await context.store.read((session) =>
    session.one<{ last_seq: number }>('bus_offset_of', { tenant_id: tenantId }),
  );
  return row?.last_seq ?? null;
}
