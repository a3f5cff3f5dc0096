-- The identifier index (src/ingest/identifier-index.ts): every stored identifier key with its
-- profile, and every profile with its created_at and the profile it was merged into, held in
-- memory so a batch finds the profiles of its keys, their ages and their identifier counts by
-- type without reading profiles or profile_identifiers.

/* @name identifier_index_counts */
-- Cheap (table statistics), and they change with any insert or delete, whoever made it.
SELECT (SELECT count(*) FROM profiles) AS profiles, (SELECT count(*) FROM profile_identifiers) AS identifiers;

/* @name identifier_index_checksum */
-- What a saved index is checked against (src/store/index-files.ts): the counts, and the sums of
-- the rows' hashes, which any change of a row moves.
SELECT (SELECT count(*) FROM profiles) AS profiles, (SELECT count(*) FROM profile_identifiers) AS identifiers,
  (SELECT coalesce(sum(hash(tenant_id, workspace_id, profile_id, created_at, merged_into)), 0) FROM profiles)::VARCHAR
    AS profiles_sum,
  (SELECT coalesce(sum(hash(tenant_id, workspace_id, identifier_key, identifier_type, profile_id)), 0)
   FROM profile_identifiers)::VARCHAR AS identifiers_sum;

/* @name identifier_index_number */
-- What a build reads, numbered: workspaces and types by name, profiles in table order (their
-- number is their row in the index), identifiers with their profile's number.
CREATE TEMP TABLE identifier_index_scopes AS
SELECT (row_number() OVER (ORDER BY tenant_id, workspace_id) - 1)::INTEGER AS scope, tenant_id, workspace_id
FROM (SELECT DISTINCT tenant_id, workspace_id FROM profiles);
CREATE TEMP TABLE identifier_index_types AS
SELECT (row_number() OVER (ORDER BY identifier_type) - 1)::INTEGER AS type_no, identifier_type
FROM (SELECT DISTINCT identifier_type FROM profile_identifiers);
CREATE TEMP TABLE identifier_index_profiles AS
SELECT (row_number() OVER () - 1)::INTEGER AS row, s.scope, p.profile_id,
  epoch_us(p.created_at)::DOUBLE AS created_us, p.merged_into
FROM profiles p JOIN identifier_index_scopes s USING (tenant_id, workspace_id);
CREATE TEMP TABLE identifier_index_identifiers AS
SELECT (row_number() OVER () - 1)::INTEGER AS n, p.row AS profile_row, t.type_no, i.identifier_key
FROM profile_identifiers i
JOIN identifier_index_scopes s USING (tenant_id, workspace_id)
JOIN identifier_index_profiles p ON p.scope = s.scope AND p.profile_id = i.profile_id
JOIN identifier_index_types t USING (identifier_type);

/* @name identifier_index_scope_names */
SELECT tenant_id, workspace_id FROM identifier_index_scopes ORDER BY scope;

/* @name identifier_index_type_names */
SELECT identifier_type FROM identifier_index_types ORDER BY type_no;

/* @name identifier_index_profile_chunk */
SELECT to_json({
  ids: coalesce(list(profile_id ORDER BY row), []), scopes: coalesce(list(scope ORDER BY row), []), created: coalesce(list(created_us ORDER BY row), [])
})::VARCHAR
FROM identifier_index_profiles WHERE row >= $from AND row < $to;

/* @name identifier_index_merged_into */
SELECT to_json({merged: coalesce(list(m.row), []), survivors: coalesce(list(s.row), [])})::VARCHAR
FROM identifier_index_profiles m
JOIN identifier_index_profiles s ON s.scope = m.scope AND s.profile_id = m.merged_into;

/* @name identifier_index_identifier_chunk */
SELECT to_json({
  profiles: coalesce(list(profile_row ORDER BY n), []), types: coalesce(list(type_no ORDER BY n), []), keys: coalesce(list(identifier_key ORDER BY n), [])
})::VARCHAR
FROM identifier_index_identifiers WHERE n >= $from AND n < $to;

/* @name identifier_index_drop_numbered */
DROP TABLE IF EXISTS identifier_index_identifiers; DROP TABLE IF EXISTS identifier_index_profiles;
DROP TABLE IF EXISTS identifier_index_types; DROP TABLE IF EXISTS identifier_index_scopes;

/* @name identifier_index_batch_keys */
SELECT coalesce(to_json(list({tenant_id: tenant_id, keys: keys})), '[]')::VARCHAR
FROM (SELECT tenant_id, list(DISTINCT identifier_key) AS keys FROM ingest_id_map GROUP BY tenant_id);

/* @name identifier_index_create_known */
-- Filled by the appender from the index: the stored identifiers this batch names, with their
-- profiles and when each was created (as JavaScript's toISOString writes it).
CREATE TEMP TABLE ingest_known (
  tenant_id VARCHAR, workspace_id VARCHAR, identifier_key VARCHAR, profile_id VARCHAR, created_at VARCHAR
);

/* @name identifier_index_new_profiles */
-- What a batch stored, per workspace, as one JSON text each (src/ingest/identifier-index.ts).
SELECT coalesce(to_json(list({tenant_id: tenant_id, workspace_id: workspace_id, ids: ids, created: created})), '[]')::VARCHAR
FROM (
  SELECT tenant_id, workspace_id, list(profile_id) AS ids, list(epoch_us(created_at::TIMESTAMP)::DOUBLE) AS created
  FROM ingest_new_profiles GROUP BY ALL
);

/* @name identifier_index_new_identifiers */
-- The rows ingest_insert_identifiers stored, in the same join.
SELECT coalesce(to_json(list({
  tenant_id: tenant_id, workspace_id: workspace_id, keys: keys, types: types, profiles: profiles
})), '[]')::VARCHAR
FROM (
  SELECT n.tenant_id, n.workspace_id, list(n.identifier_key) AS keys, list(n.identifier_type) AS types,
    list(n.profile_id) AS profiles
  FROM ingest_new_identifiers n JOIN ingest_encrypted s USING (tenant_id, identifier_key)
  GROUP BY ALL
);

/* @name identifier_index_merges */
SELECT coalesce(to_json(list({
  tenant_id: tenant_id, workspace_id: workspace_id, merged: merged, survivors: survivors
})), '[]')::VARCHAR
FROM (
  SELECT tenant_id, workspace_id, list(merged_profile_id) AS merged, list(survivor_profile_id) AS survivors
  FROM ingest_merges GROUP BY ALL
);
