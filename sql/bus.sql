/* @name bus_offsets */
-- The last stream sequence the database holds of each tenant that has one.
SELECT tenant_id, last_seq::DOUBLE AS last_seq FROM bus_offsets;

/* @name bus_offset_of */
SELECT last_seq::DOUBLE AS last_seq FROM bus_offsets WHERE tenant_id = $tenant_id;

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
