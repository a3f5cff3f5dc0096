-- Store upkeep (src/store/: live-rewrite.ts, backup-copy.ts, table-cache.ts, database.ts). `cds` is
-- the database of cds.duckdb.

/* @name store_take_snapshot */
-- The first read of a transaction fixes what it sees (Store.replaceWithCopy takes the copy's
-- snapshot between two writes).
SELECT count(*) AS migrations FROM cds.schema_migrations;

/* @name store_copy_to_rewrite */
-- Every table, view, sequence, index and constraint, with live rows only, into the file that
-- replaces cds.duckdb (Store.replaceWithCopy).
COPY FROM DATABASE cds TO cds_rewrite;

/* @name store_checkpoint_rewrite */
-- What was written into the copy after it was made (the replayed writes) goes into its file, not
-- a log left beside it.
CHECKPOINT cds_rewrite;

/* @name store_use_rewrite */
-- Writes committed after the copy's snapshot run again on the copy, their unqualified names
-- meaning its tables (Store.writeReplayable).
USE cds_rewrite;

/* @name store_use_live */
USE cds;

/* @name store_detach_rewrite */
DETACH cds_rewrite;

/* @name store_memory_limit */
SELECT current_setting('memory_limit') AS memory_limit;

/* @name store_memory_held */
-- Cached table blocks, and what DuckDB holds besides them, which it cannot evict without a
-- temporary directory.
SELECT
  coalesce(sum(memory_usage_bytes) FILTER (WHERE tag = 'BASE_TABLE'), 0)::BIGINT AS cached,
  coalesce(sum(memory_usage_bytes) FILTER (WHERE tag <> 'BASE_TABLE'), 0)::BIGINT AS held
FROM duckdb_memory();

/* @name store_copy_to_backup */
-- Every table, view, sequence, index and constraint, with live rows only, into a backup's file
-- (Store.copyTo): a database the same cds opens as its own, with its schema_migrations.
COPY FROM DATABASE cds TO cds_backup;

/* @name store_detach_backup */
DETACH cds_backup;

/* @name store_schema_version */
-- The newest migration applied: what a backup says it needs.
SELECT coalesce(max(version), 0)::INTEGER AS schema_version FROM cds.schema_migrations;
