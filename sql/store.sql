-- Store upkeep (src/store/database.ts). `cds` is the database of cds.duckdb.

/* @name store_copy_to_rewrite */
-- Every table, view, sequence, index and constraint, with live rows only, into the file that
-- replaces cds.duckdb (Store.replaceWithCopy).
COPY FROM DATABASE cds TO cds_rewrite;

/* @name store_detach_rewrite */
DETACH cds_rewrite;
