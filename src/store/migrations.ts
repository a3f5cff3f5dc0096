import type { DuckDBConnection } from '@duckdb/node-api';
import { DatabaseTooNewError } from '../errors.js';
import { type Migration, migrations } from './sql-files.js';
import type { Work } from './transaction.js';

/** How migrations reach the database they change. */
interface MigratedDatabase {
  read<T>(work: Work<T>): Promise<T>;
  write<T>(work: Work<T>): Promise<T>;
}

/**
 * Applies the migrations in `sql/migrations/` the database at `path` has not had yet, in order,
 * each in a write of its own that records it in `schema_migrations`, then checkpoints them into
 * the file. Refuses a database a newer cds migrated further.
 */
export async function applyMigrations(
  path: string,
  writer: DuckDBConnection,
  database: MigratedDatabase,
): Promise<void> {
  await writer.run(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT now())',
  );
  const applied = await database.read((session) =>
    session.allText<{ version: number }>('SELECT version FROM schema_migrations'),
  );
  const done = new Set(applied.map((row) => row.version));
  const known = migrations();
  const newestKnown = Math.max(0, ...known.map((migration) => migration.version));
  const newestApplied = Math.max(0, ...done);
  // Before any migration runs: a newer cds's tables are not this one's to change.
  if (newestApplied > newestKnown) {
    throw new DatabaseTooNewError(path, newestApplied, newestKnown);
  }
  const pending = known.filter((migration) => !done.has(migration.version));
  for (const migration of pending) await applyMigration(database, migration);
  // Changes of schema never wait in DuckDB's log: replaying a column added with a default
  // (migration 015) fails inside DuckDB ("GetDefaultDatabase with no default database set"), and
  // a process killed before its log was checkpointed left a database that would not open.
  if (pending.length > 0 || done.size === 0) await writer.run('CHECKPOINT');
}

function applyMigration(database: MigratedDatabase, migration: Migration): Promise<void> {
  return database.write(async (session) => {
    await session.runText(migration.text);
    await session.runText(
      'INSERT INTO schema_migrations (version, name) VALUES ($version, $name)',
      {
        version: migration.version,
        name: migration.name,
      },
    );
  });
}
