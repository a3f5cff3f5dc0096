/* @name bus_offsets */
-- The last stream sequence the database holds of each tenant that has one.
SELECT tenant_id, last_seq::DOUBLE AS last_seq FROM bus_offsets;

/* @name bus_offsets_advance */
-- $offsets: [{"tenant_id", "last_seq"}]; a sequence never goes back.
INSERT INTO bus_offsets (tenant_id, last_seq, updated_at)
SELECT o.tenant_id, o.last_seq, $now::TIMESTAMP
FROM (
  SELECT unnest(CAST($offsets AS JSON)::STRUCT(tenant_id VARCHAR, last_seq UBIGINT)[], recursive := true)
) o
ON CONFLICT (tenant_id) DO UPDATE SET
  last_seq = greatest(bus_offsets.last_seq, excluded.last_seq),
  updated_at = excluded.updated_at;

/* @name bus_known_tenants */
-- Every tenant of the database, for assigning those the shard map does not know yet.
SELECT tenant_id FROM tenants ORDER BY tenant_id;

/* @name bus_tenant_tables */
-- The tables that hold rows of one tenant (a tenant_id column), which a move copies whole, with
-- their (U)HUGEINT columns: Parquet would write those as DOUBLE, so they travel as text.
SELECT t.table_name,
  coalesce(list(c.column_name ORDER BY c.column_index) FILTER (c.data_type IN ('HUGEINT', 'UHUGEINT')), []) AS wide_columns
FROM duckdb_tables() t
JOIN duckdb_columns() c USING (database_name, schema_name, table_name)
WHERE t.database_name = current_database() AND t.schema_name = 'main' AND NOT t.temporary
GROUP BY t.table_name
HAVING bool_or(c.column_name = 'tenant_id')
ORDER BY t.table_name;

/* @name bus_holds_tenant */
SELECT count(*)::INTEGER AS n FROM tenants WHERE tenant_id = $tenant_id;

/* @name bus_offset_of */
SELECT last_seq::DOUBLE AS last_seq FROM bus_offsets WHERE tenant_id = $tenant_id;

/* @name bus_stream_retention_set */
-- $max_age_ms: the stream's max_age (0: it keeps messages for ever).
INSERT INTO bus_stream_retention (one, max_age_ms, read_at) VALUES (1, $max_age_ms, $now::TIMESTAMP)
ON CONFLICT (one) DO UPDATE SET max_age_ms = excluded.max_age_ms, read_at = excluded.read_at;
