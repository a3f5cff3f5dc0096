-- One ingest micro-batch (design §9), in the order its steps run them (src/ingest/pipeline.ts
-- lists the steps, src/ingest/identities.ts those of identity), all in one transaction. Temporary
-- tables hold the batch; they never reach the database file. Each is made by one step, which
-- returns its handle (src/store/temporary-table.ts) to the steps that read it.

/* @name ingest_already_done */
SELECT path FROM ingested_files WHERE list_contains(CAST($paths AS JSON)::VARCHAR[], path);

/* @name ingest_catalog */
-- What the stage checks lines against, bound into it as constants.
SELECT
  (SELECT coalesce(list(tenant_id || '/' || workspace_id), []) FROM workspaces)::JSON::VARCHAR AS workspaces,
  (SELECT coalesce(json_group_object(tenant_id || '/' || event_name, json_object(
     'entity', dedup_entity, 'paths', list_transform(dedup_key_paths, path -> '$.' || path[12:]))), '{}')
   FROM event_types)::VARCHAR AS event_types;

/* @name ingest_stage */
-- Every line parsed, checked and given its dedup key in one pass over the files. It is a plain
-- projection of read_json, so rowid follows the files in the order given, then their lines (a
-- join would reorder them): workspaces and event types come in as constants ($workspaces as
-- "tenant/workspace", $event_types by "tenant/event_name").
-- utc_timestamp: a string ending in Z takes the plain cast, four times cheaper than the
-- time-zone-aware one, which only explicit offsets need (a plain cast would drop them). A line
-- keeps its file as a position in $paths, not the path: it is held for every line of the batch.
-- A dedup key of key paths holds their values as a JSON array, so no value can pass for two
-- (joined with '|', ("c1|7", "1") and ("c1", "7|1") were one key); a missing value counts as "".
-- intake, the API a line came through when not cds's own (absent on older lines), is read by the
-- live view only: no check or rule looks at it.
CREATE OR REPLACE TEMP MACRO utc_timestamp(text) AS CASE
  WHEN ends_with(text, 'Z') THEN try_cast(text AS TIMESTAMP)
  ELSE try_cast(text AS TIMESTAMPTZ)::TIMESTAMP
END;
CREATE TEMP TABLE ingest_checked AS
SELECT file_index, received_at, source, intake, event_id, event_name, tenant_id, workspace_id, anon_id, occured_at, properties,
  CASE
    WHEN event_id IS NULL OR received_at IS NULL OR source NOT IN ('browser', 'server') THEN 'unparsable_line'
    WHEN envelop_version IS DISTINCT FROM '1.0' THEN 'unsupported_envelop_version'
    WHEN NOT known_workspace THEN 'unknown_workspace'
    WHEN event_type IS NULL THEN 'unknown_event_type'
    WHEN occured_at IS NULL THEN 'invalid_occured_at'
    WHEN source = 'browser' AND (anon_id IS NULL OR NOT starts_with(anon_id, 'cookie:')) THEN 'missing_anon_id'
  END AS reject_reason,
  dedup_key,
  md5_number(tenant_id || '/' || workspace_id || '/' || event_name || '/' || dedup_key) AS dedup_hash
FROM (
  SELECT *,
    CASE
      WHEN event_type.paths IS NULL THEN 'id:' || event_id
      ELSE event_type.entity || ':' || to_json(
        list_transform(event_type.paths, path -> coalesce(json_extract_string(properties, path), '')))::VARCHAR
    END AS dedup_key
  FROM (
    SELECT list_position(CAST($paths AS JSON)::VARCHAR[], r.filename)::UINTEGER AS file_index, utc_timestamp(r.received_at) AS received_at, r.source, r.intake,
      r.event.envelop_version AS envelop_version, r.event.id AS event_id, r.event.name AS event_name,
      r.event.tenant_id AS tenant_id, r.event.workspace_id AS workspace_id, r.event.anon_id AS anon_id,
      utc_timestamp(r.event.occured_at) AS occured_at, r.event.properties AS properties,
      coalesce(list_contains(CAST($workspaces AS JSON)::VARCHAR[], r.event.tenant_id || '/' || r.event.workspace_id), false)
        AS known_workspace,
      (CAST($event_types AS JSON)::MAP(VARCHAR, STRUCT(entity VARCHAR, paths VARCHAR[])))[r.event.tenant_id || '/' || r.event.name]
        AS event_type
    FROM read_json(CAST($paths AS JSON)::VARCHAR[],
      format = 'newline_delimited', filename = true, ignore_errors = true,
      columns = {
        received_at: 'VARCHAR', source: 'VARCHAR', intake: 'VARCHAR', collector_id: 'VARCHAR',
        event: 'STRUCT(envelop_version VARCHAR, id VARCHAR, name VARCHAR, tenant_id VARCHAR, workspace_id VARCHAR, anon_id VARCHAR, occured_at VARCHAR, properties JSON)'
      }) r
  )
);

/* @name ingest_mark_duplicates */
-- Lines whose key a stored event already holds are duplicates: those the dedup index found
-- (ingest_stored_keys, src/ingest/dedup-index.ts), not a pass over every stored key. Of the rest, a key the batch holds
-- once is that line's; a key held by several lines is contested: its first line with usable
-- identifiers wins (ingest_first_seen), as one line a batch would give, so only contested lines
-- are keyed beyond each key's first. Only line numbers are kept; ingest_candidates shows those
-- lines of ingest_checked, so the batch's lines are held in memory once.
CREATE TEMP TABLE ingest_hash_firsts AS
SELECT n.dedup_hash, min(n.rowid) AS seq, count(*) AS lines
FROM ingest_checked n ANTI JOIN ingest_stored_keys e ON e.dedup_hash = n.dedup_hash
WHERE n.reject_reason IS NULL
GROUP BY n.dedup_hash;
CREATE TEMP TABLE ingest_contested AS
SELECT c.rowid AS seq, c.dedup_hash
FROM ingest_checked c SEMI JOIN (SELECT dedup_hash FROM ingest_hash_firsts WHERE lines > 1) h USING (dedup_hash)
WHERE c.reject_reason IS NULL;
CREATE TEMP TABLE ingest_keyed_lines AS
SELECT seq FROM ingest_hash_firsts WHERE lines = 1
UNION ALL
SELECT seq FROM ingest_contested;
CREATE TEMP VIEW ingest_candidates AS
SELECT c.rowid AS seq, c.* EXCLUDE (reject_reason)
FROM ingest_checked c SEMI JOIN ingest_keyed_lines k ON k.seq = c.rowid;

/* @name ingest_extract_identifiers */
-- anon_id first, then properties.identifiers in the order written; only declared types, and on
-- browser events only cookie and device_id (interface "Inbound events" 3). A key is the tenant's
-- text, whatever its spelling ($x, a.b, "q", [0], the empty string): its value is read with a JSON
-- pointer (RFC 6901, where escaping ~ and / leaves no other special character), never with the key
-- as a $-path, which a key starting with $ or holding . " [ broke for the whole batch. Only string
-- and number values are identifiers, as the collector checks (src/collector/event-content.ts).
CREATE OR REPLACE TEMP MACRO json_key_pointer(k) AS '/' || replace(replace(k, '~', '~0'), '/', '~1');
CREATE TEMP TABLE ingest_identifiers AS
WITH candidates AS (
  SELECT seq, tenant_id, source, 0 AS ord, 'cookie' AS identifier_type, anon_id[8:] AS raw_value
  FROM ingest_candidates WHERE starts_with(anon_id, 'cookie:')
  UNION ALL
  SELECT seq, tenant_id, source, ord, identifier_type,
    CASE WHEN json_type(value) IN ('VARCHAR', 'BIGINT', 'UBIGINT', 'DOUBLE') THEN value->>'$' END AS raw_value
  FROM (
    SELECT seq, tenant_id, source, entry.i AS ord, entry.k AS identifier_type, ids->json_key_pointer(entry.k) AS value
    FROM (
      SELECT seq, tenant_id, source, ids,
        unnest(list_transform(json_keys(ids), (k, i) -> {'k': k, 'i': i})) AS entry
      FROM (SELECT seq, tenant_id, source, properties->'identifiers' AS ids FROM ingest_candidates)
      WHERE json_type(ids) = 'OBJECT'
    )
  )
)
SELECT c.seq, c.ord, c.tenant_id, c.identifier_type, c.raw_value
FROM candidates c
JOIN identifier_types t ON t.tenant_id = c.tenant_id AND t.identifier_type = c.identifier_type
WHERE c.raw_value IS NOT NULL
  AND (c.source = 'server' OR c.identifier_type IN ('cookie', 'device_id'));

/* @name ingest_create_keying_tables */
-- Filled by the appender, for this batch only: each tenant's HMAC pads (TenantKeys.lookupPads),
-- and the values JS normalised.
CREATE TEMP TABLE ingest_lookup_pads (tenant_id VARCHAR, inner_pad BLOB, outer_pad BLOB);
CREATE TEMP TABLE ingest_js_normalized (tenant_id VARCHAR, identifier_type VARCHAR, raw_value VARCHAR, normalized VARCHAR);

/* @name ingest_distinct_values */
-- Each distinct value once (design §10). Printable ASCII values of types other than phone are
-- normalised here, where trim and lower give what JavaScript's do; phones (libphonenumber) and
-- any other value are normalised in JS (src/identity/normalize.ts).
CREATE TEMP TABLE ingest_values AS
SELECT tenant_id, identifier_type, raw_value, in_js,
  CASE WHEN NOT in_js THEN nullif(CASE WHEN identifier_type = 'email' THEN lower(trim(raw_value)) ELSE trim(raw_value) END, '') END
    AS normalized
FROM (
  SELECT tenant_id, identifier_type, raw_value, identifier_type = 'phone' OR NOT regexp_full_match(raw_value, '[ -~]*') AS in_js
  FROM (SELECT DISTINCT tenant_id, identifier_type, raw_value FROM ingest_identifiers)
);

/* @name ingest_batch_tenants */
SELECT DISTINCT tenant_id FROM ingest_values;

/* @name ingest_values_for_js */
SELECT tenant_id, identifier_type, raw_value FROM ingest_values WHERE in_js;

/* @name ingest_key_values */
-- Placeholders are dropped ($placeholders by "tenant/type", stored normalised for their type and
-- lowercased: the value normalised or as typed, lowercased, is compared; JS did that for its own
-- values, phones among them), the rest keyed as TenantKeys.identifierKey does:
-- base64url(HMAC-SHA256(tenant lookup key, type ":" normalised)). A 32-byte digest is 43 base64
-- characters and one '=': cutting it and two replace() cost less than rtrim() and translate().
-- key_id numbers the keys of the batch, after the hashing: row_number() OVER () runs on one
-- thread, and what sits above it too.
CREATE TEMP TABLE ingest_id_map AS
SELECT *, row_number() OVER ()::INTEGER AS key_id
FROM (
  SELECT v.tenant_id, v.identifier_type, v.raw_value, v.normalized,
    replace(replace(to_base64(unhex(sha256(p.outer_pad || unhex(sha256(
      p.inner_pad || encode(v.identifier_type || ':' || v.normalized))))))[1:43], '+', '-'), '/', '_') AS identifier_key
  FROM (
    SELECT v.tenant_id, v.identifier_type, v.raw_value, coalesce(v.normalized, j.normalized) AS normalized, v.in_js,
      coalesce((CAST($placeholders AS JSON)::MAP(VARCHAR, VARCHAR[]))[v.tenant_id || '/' || v.identifier_type], [])
        AS placeholders
    FROM ingest_values v
    LEFT JOIN ingest_js_normalized j USING (tenant_id, identifier_type, raw_value)
  ) v
  JOIN ingest_lookup_pads p USING (tenant_id)
  WHERE v.normalized IS NOT NULL
    AND (v.in_js OR NOT (list_contains(v.placeholders, lower(v.normalized))
                         OR list_contains(v.placeholders, lower(trim(v.raw_value)))))
);

/* @name ingest_dropped_values */
SELECT (SELECT count(*) FROM ingest_values) - (SELECT count(*) FROM ingest_id_map) AS dropped;

/* @name ingest_group_event_keys */
-- One row per event: the numbers of its keys in the order given. list_sort on {ord, key_id}
-- orders them: an ordered aggregate, list(… ORDER BY ord), is far slower. The keys themselves
-- and their types are looked up by number in ingest_key_lists where needed: key_id runs 1..n, so
-- a list index finds them, cheaper than carrying the strings through the grouping.
CREATE TEMP TABLE ingest_key_lists AS
SELECT list(identifier_key ORDER BY key_id) AS keys, list(identifier_type ORDER BY key_id) AS types
FROM ingest_id_map;
CREATE TEMP TABLE ingest_event_keys AS
WITH entries AS (
  SELECT i.seq, list_sort(list({'ord': i.ord, 'key_id': m.key_id})) AS entries
  FROM ingest_identifiers i
  JOIN ingest_id_map m
    ON m.raw_value = i.raw_value AND m.tenant_id = i.tenant_id AND m.identifier_type = i.identifier_type
  GROUP BY i.seq
)
SELECT a.seq, a.tenant_id, a.workspace_id, a.source, list_transform(e.entries, entry -> entry.key_id) AS key_ids
FROM ingest_candidates a JOIN entries e USING (seq);

/* @name ingest_drop_erased */
-- A line received before an erasure that carries one of its identifier keys was in flight for the
-- erased profile (design §15): it is dropped, and no trace of it is kept.
CREATE TEMP TABLE ingest_erased AS
SELECT DISTINCT k.seq
FROM (SELECT seq, tenant_id, workspace_id, unnest(key_ids) AS key_id FROM ingest_event_keys) k
JOIN ingest_id_map m USING (key_id)
JOIN identifier_tombstones t
  ON t.tenant_id = k.tenant_id AND t.workspace_id = k.workspace_id AND t.identifier_key = m.identifier_key
JOIN ingest_candidates a ON a.seq = k.seq
WHERE a.received_at <= t.erased_at;
DELETE FROM ingest_event_keys WHERE seq IN (SELECT seq FROM ingest_erased);

/* @name ingest_first_seen */
-- First seen wins among the lines that can be stored: a contested key goes to its first line that
-- still has identifiers (none dropped as placeholders, not erased). The lines before it are
-- rejected (no_identifiers) or erased, the lines after it are duplicates, as they would be one
-- line a batch. Before, a first line without identifiers took the key and a later line with
-- identifiers was lost as its duplicate, though it was stored when it came in a later batch.
CREATE TEMP TABLE ingest_first_seen AS
WITH stored AS (
  SELECT c.dedup_hash, min(c.seq) AS seq
  FROM ingest_contested c SEMI JOIN ingest_event_keys k USING (seq)
  GROUP BY c.dedup_hash
)
SELECT seq FROM ingest_hash_firsts WHERE lines = 1
UNION ALL
SELECT c.seq FROM ingest_contested c LEFT JOIN stored s USING (dedup_hash)
WHERE s.seq IS NULL OR c.seq <= s.seq;
DELETE FROM ingest_erased WHERE seq NOT IN (SELECT seq FROM ingest_first_seen);
DELETE FROM ingest_first_seen WHERE seq IN (SELECT seq FROM ingest_erased);
DELETE FROM ingest_event_keys
WHERE seq IN (SELECT seq FROM ingest_contested) AND seq NOT IN (SELECT seq FROM ingest_first_seen);
CREATE TEMP VIEW ingest_accepted AS
SELECT c.rowid AS seq, c.* EXCLUDE (reject_reason)
FROM ingest_checked c SEMI JOIN ingest_first_seen f ON f.seq = c.rowid;

/* @name ingest_group_sets */
-- Events with the same identifier keys resolve alike, as one set. A set is named by the line
-- number of its first event, so set ids sort in order of first use, and one window pass finds
-- every event's set (cheaper than grouping, then joining back on the key lists). Line numbers
-- are rowids of a table created in the transaction, which start near 2^55: counted from the
-- batch's first, they fit an INTEGER and a JavaScript number.
CREATE TEMP TABLE ingest_event_sets AS
SELECT seq,
  (min(seq) OVER (PARTITION BY tenant_id, workspace_id, source, key_ids) - (SELECT min(rowid) FROM ingest_checked))::INTEGER
    AS set_id
FROM ingest_event_keys;
CREATE TEMP TABLE ingest_sets AS
SELECT s.set_id, k.tenant_id, k.workspace_id, k.source, k.key_ids, a.event_id AS first_event_id,
  a.occured_at AS first_at, list_transform(k.key_ids, id -> l.keys[id]) AS keys,
  list_transform(k.key_ids, id -> l.types[id]) AS types
FROM ingest_event_sets s
JOIN ingest_event_keys k ON k.seq = s.seq
JOIN ingest_accepted a ON a.seq = s.seq
CROSS JOIN ingest_key_lists l
WHERE s.seq = s.set_id + (SELECT min(rowid) FROM ingest_checked);

/* @name ingest_identity_sets */
-- One JSON text (Session.json); times as JavaScript's toISOString writes them, so they compare
-- as text with ingest_known_identifiers' created_at.
SELECT coalesce(to_json(list({
  set_id: set_id, tenant_id: tenant_id, workspace_id: workspace_id, source: source, keys: keys, types: types,
  first_event_id: first_event_id, first_at: strftime(first_at, '%Y-%m-%dT%H:%M:%S.%gZ')
} ORDER BY set_id)), '[]')::VARCHAR
FROM ingest_sets ANTI JOIN ingest_settled USING (set_id) ANTI JOIN ingest_fresh USING (set_id);

/* @name ingest_settle_sets */
-- A set whose keys are all stored, with one profile, goes to that profile and changes nothing:
-- in a stream of returning customers most sets are such, and only the rest is resolved in JS.
CREATE TEMP TABLE ingest_set_keys AS
SELECT s.set_id, s.tenant_id, s.workspace_id, m.identifier_key, m.identifier_type
FROM (SELECT set_id, tenant_id, workspace_id, unnest(key_ids) AS key_id FROM ingest_sets) s
JOIN ingest_id_map m ON m.key_id = s.key_id;
CREATE TEMP TABLE ingest_settled AS
SELECT s.set_id, any_value(s.tenant_id) AS tenant_id, any_value(s.workspace_id) AS workspace_id,
  min(k.profile_id) AS profile_id
FROM ingest_set_keys s
LEFT JOIN ingest_known k USING (tenant_id, workspace_id, identifier_key)
GROUP BY s.set_id
HAVING count(k.profile_id) = count(*) AND min(k.profile_id) = max(k.profile_id);
-- A set whose keys are all new and named by no other set of its workspace in the batch starts a
-- profile of its own, whatever the order of the sets: SQL gives it the profile resolveIdentities
-- would (profileIdFor: its first key and first event), so new customers do not cross into JS. A
-- set with more keys of a type than max_per_profile allows is left to JS, which records the conflict.
CREATE TEMP TABLE ingest_fresh AS
WITH shared AS (
  SELECT tenant_id, workspace_id, identifier_key FROM ingest_set_keys
  GROUP BY ALL HAVING min(set_id) < max(set_id)
),
touching AS (
  SELECT set_id FROM ingest_set_keys SEMI JOIN ingest_known USING (tenant_id, workspace_id, identifier_key)
  UNION ALL
  SELECT set_id FROM ingest_set_keys SEMI JOIN shared USING (tenant_id, workspace_id, identifier_key)
),
crowded AS (
  SELECT k.set_id
  FROM ingest_set_keys k
  SEMI JOIN (SELECT set_id FROM ingest_sets WHERE len(key_ids) > 1) m USING (set_id)
  JOIN identifier_types t ON t.tenant_id = k.tenant_id AND t.identifier_type = k.identifier_type
  GROUP BY k.set_id, k.identifier_type, t.max_per_profile
  HAVING count(DISTINCT k.identifier_key) > t.max_per_profile
)
SELECT s.set_id, s.tenant_id, s.workspace_id,
  'p_' || sha256(s.tenant_id || chr(0) || s.workspace_id || chr(0) || s.keys[1] || chr(0) || s.first_event_id)[1:24]
    AS profile_id,
  strftime(s.first_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS first_at
FROM ingest_sets s ANTI JOIN touching USING (set_id) ANTI JOIN crowded USING (set_id);
CREATE TEMP TABLE ingest_open_known AS
SELECT DISTINCT k.tenant_id, k.workspace_id, k.identifier_key, k.profile_id, k.created_at
FROM ingest_known k
SEMI JOIN (
  SELECT tenant_id, workspace_id, identifier_key FROM ingest_set_keys
  ANTI JOIN ingest_settled USING (set_id)
) o USING (tenant_id, workspace_id, identifier_key);

/* @name ingest_known_identifiers */
-- What the sets left to resolve need: the stored profiles of their keys, as one JSON text.
SELECT coalesce(to_json(list({
  tenant_id: tenant_id, workspace_id: workspace_id, identifier_key: identifier_key, profile_id: profile_id,
  created_at: created_at
})), '[]')::VARCHAR
FROM ingest_open_known;

/* @name ingest_set_repeats */
-- The later events of the sets named, at their places in the batch (counted as set ids are),
-- for resolveIdentities to resolve one by one where the set's first event did not settle it.
SELECT s.set_id, (s.seq - b.first_rowid)::INTEGER AS event_offset, a.event_id,
  strftime(a.occured_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS at
FROM ingest_event_sets s
JOIN ingest_accepted a USING (seq)
CROSS JOIN (SELECT min(rowid) AS first_rowid FROM ingest_checked) b
WHERE list_contains(CAST($set_ids AS JSON)::INTEGER[], s.set_id) AND s.seq - b.first_rowid <> s.set_id
ORDER BY event_offset;

/* @name ingest_resolve_fresh */
-- The fresh sets' new profiles and identifiers, beside what JS resolved (ingest_settle_sets).
INSERT INTO ingest_resolution SELECT set_id, profile_id FROM ingest_fresh;
INSERT INTO ingest_new_profiles SELECT tenant_id, workspace_id, profile_id, first_at FROM ingest_fresh;
INSERT INTO ingest_new_identifiers
SELECT DISTINCT k.tenant_id, k.workspace_id, k.identifier_key, k.identifier_type, f.profile_id, f.first_at
FROM ingest_set_keys k JOIN ingest_fresh f USING (set_id);

/* @name ingest_resolve_settled */
-- A settled set's profile may have been merged by a set resolved after it: its events follow.
INSERT INTO ingest_resolution
SELECT s.set_id, coalesce(m.survivor_profile_id, s.profile_id)
FROM ingest_settled s
LEFT JOIN ingest_merges m
  ON m.tenant_id = s.tenant_id AND m.workspace_id = s.workspace_id AND m.merged_profile_id = s.profile_id;

/* @name ingest_create_outcome_tables */
-- Filled by the appender from the identity resolution in src/identity/resolve.ts.
CREATE TEMP TABLE ingest_resolution (set_id INTEGER, profile_id VARCHAR);
CREATE TEMP TABLE ingest_repeat_resolution (event_offset INTEGER, profile_id VARCHAR);
CREATE TEMP TABLE ingest_new_profiles (tenant_id VARCHAR, workspace_id VARCHAR, profile_id VARCHAR, created_at VARCHAR);
CREATE TEMP TABLE ingest_new_identifiers (
  tenant_id VARCHAR, workspace_id VARCHAR, identifier_key VARCHAR, identifier_type VARCHAR, profile_id VARCHAR,
  first_seen_at VARCHAR
);
CREATE TEMP TABLE ingest_encrypted (tenant_id VARCHAR, identifier_key VARCHAR, ciphertext BLOB, masked_value VARCHAR);
CREATE TEMP TABLE ingest_merges (
  tenant_id VARCHAR, workspace_id VARCHAR, merged_profile_id VARCHAR, survivor_profile_id VARCHAR, event_id VARCHAR
);
CREATE TEMP TABLE ingest_conflicts (
  tenant_id VARCHAR, workspace_id VARCHAR, profile_id VARCHAR, other_profile_id VARCHAR, identifier_type VARCHAR,
  reason VARCHAR, event_id VARCHAR
);

/* @name ingest_insert_profiles */
INSERT INTO profiles (tenant_id, workspace_id, profile_id, created_at, last_seen_at, merged_into)
SELECT tenant_id, workspace_id, profile_id, created_at::TIMESTAMP, created_at::TIMESTAMP, NULL FROM ingest_new_profiles;

/* @name ingest_number_values_to_encrypt */
-- The normalised value of each new identifier, to encrypt and mask in JS: only the new ones cross,
-- numbered so that they cross in chunks.
CREATE TEMP TABLE ingest_to_encrypt AS
SELECT row_number() OVER () AS n, *
FROM (
  SELECT DISTINCT n.tenant_id, n.identifier_key, n.identifier_type, m.normalized
  FROM ingest_new_identifiers n JOIN ingest_id_map m USING (tenant_id, identifier_key)
);

/* @name ingest_values_to_encrypt */
-- One chunk, as one JSON text: the $chunk values after the first $after.
SELECT coalesce(to_json(list({
  tenant_id: tenant_id, identifier_key: identifier_key, identifier_type: identifier_type, normalized: normalized
})), '[]')::VARCHAR
FROM ingest_to_encrypt
WHERE n > $after AND n <= $after + $chunk;

/* @name ingest_insert_identifiers */
INSERT INTO profile_identifiers (tenant_id, workspace_id, identifier_key, identifier_type, profile_id, ciphertext, masked_value, first_seen_at)
SELECT n.tenant_id, n.workspace_id, n.identifier_key, n.identifier_type, n.profile_id, s.ciphertext, s.masked_value,
  n.first_seen_at::TIMESTAMP
FROM ingest_new_identifiers n JOIN ingest_encrypted s USING (tenant_id, identifier_key);

/* @name ingest_record_merges */
INSERT INTO profile_merge_records
SELECT tenant_id, workspace_id, merged_profile_id, survivor_profile_id, event_id, $now::TIMESTAMP FROM ingest_merges;

/* @name ingest_apply_merges_to_profiles */
-- The merged profile, and the profiles merged into it before, now point at the survivor, in one
-- pass: a live profile's own id stands for its merged_into.
-- A merged profile's last seen counts for its survivor: its row's and what was appended for it,
-- appended for the survivor (readers take the greatest; nothing of the survivor's row is
-- rewritten). Its created_at needs nothing: the survivor is the oldest of the cluster
-- (src/identity/resolve.ts orders by created_at, which ingest stores to the millisecond, as
-- resolution compares it).
-- Rows that a merge changes are deleted and inserted again, not updated (here and in
-- metrics_take_touched_rows): DuckDB's checkpoint writes again every row group holding an updated
-- row, and a batch's few dozen merges touch as many row groups scattered over the table (100 to
-- 150 ms a checkpoint for profiles at 10M events stored), while a deletion is a mark and an
-- insert appends. Rowids stay put inside the transaction, so each row is found again by its own.
-- The rows are found by their keys alone and then read whole by rowid, which prunes the scan to
-- them (metrics_take_touched_rows).
-- The merges recorded before stay as they are: profile_merges reads each under its survivor's
-- merged_into, so a survivor's history lists every merge of its cluster however they were cut
-- (migration 021).
CREATE TEMP TABLE ingest_moved_rowids AS
SELECT p.rowid AS moved_rowid
FROM profiles p
SEMI JOIN ingest_merges m
  ON p.tenant_id = m.tenant_id AND p.workspace_id = m.workspace_id
  AND coalesce(p.merged_into, p.profile_id) = m.merged_profile_id;
CREATE TEMP TABLE ingest_moved_profiles AS
SELECT p.moved_rowid, p.profile_id = m.merged_profile_id AS merged_now,
  p.* EXCLUDE (moved_rowid) REPLACE (m.survivor_profile_id AS merged_into)
FROM (
  SELECT p.rowid AS moved_rowid, p.*
  FROM profiles p SEMI JOIN ingest_moved_rowids r ON p.rowid = r.moved_rowid
) p
JOIN ingest_merges m
  ON p.tenant_id = m.tenant_id AND p.workspace_id = m.workspace_id
  AND coalesce(p.merged_into, p.profile_id) = m.merged_profile_id;
DROP TABLE ingest_moved_rowids;
INSERT INTO profile_last_seen
SELECT tenant_id, workspace_id, survivor_profile_id, max(last_seen_at)
FROM (
  SELECT tenant_id, workspace_id, merged_into AS survivor_profile_id, last_seen_at
  FROM ingest_moved_profiles WHERE merged_now
  UNION ALL
  SELECT m.tenant_id, m.workspace_id, m.survivor_profile_id, l.last_seen_at
  FROM ingest_merges m
  JOIN profile_last_seen l
    ON l.tenant_id = m.tenant_id AND l.workspace_id = m.workspace_id AND l.profile_id = m.merged_profile_id
)
GROUP BY ALL;
DELETE FROM profiles WHERE rowid IN (SELECT moved_rowid FROM ingest_moved_profiles);
INSERT INTO profiles SELECT * EXCLUDE (moved_rowid, merged_now) FROM ingest_moved_profiles;
DROP TABLE ingest_moved_profiles;

/* @name ingest_apply_merges_to_identifiers */
-- Updated in place, unlike profiles: a row of profile_identifiers is wide (its ciphertext), and
-- reading the moved rows whole cost more than the checkpoint saved.
UPDATE profile_identifiers i SET profile_id = m.survivor_profile_id
FROM ingest_merges m
WHERE i.tenant_id = m.tenant_id AND i.workspace_id = m.workspace_id AND i.profile_id = m.merged_profile_id;

/* @name ingest_apply_merges_to_frozen_segments */
-- Segments that are not evaluated (paused, draft, archived) keep their members frozen, but a
-- merged-away profile no longer exists: its memberships pass to the survivor (the earlier entry
-- kept where both were members), so member_count and the member list, which shows live profiles,
-- still agree. Active segments need nothing here: the merged-away profile exits when they are
-- evaluated, and the survivor is evaluated.
CREATE TEMP TABLE ingest_frozen_moves AS
SELECT m.tenant_id, m.workspace_id, m.segment_id, g.survivor_profile_id AS profile_id, m.entered_at,
  m.profile_id AS merged_profile_id
FROM segment_members m
JOIN ingest_merges g
  ON g.tenant_id = m.tenant_id AND g.workspace_id = m.workspace_id AND g.merged_profile_id = m.profile_id
JOIN segments s
  ON s.tenant_id = m.tenant_id AND s.workspace_id = m.workspace_id AND s.segment_id = m.segment_id
WHERE s.status <> 'active';
CREATE TEMP TABLE ingest_frozen_members AS
SELECT tenant_id, workspace_id, segment_id, profile_id, min(entered_at) AS entered_at FROM (
  SELECT tenant_id, workspace_id, segment_id, profile_id, entered_at FROM ingest_frozen_moves
  UNION ALL
  SELECT m.tenant_id, m.workspace_id, m.segment_id, m.profile_id, m.entered_at
  FROM segment_members m SEMI JOIN ingest_frozen_moves f USING (tenant_id, workspace_id, segment_id, profile_id)
) GROUP BY ALL;
DELETE FROM segment_members m USING ingest_frozen_moves f
WHERE m.tenant_id = f.tenant_id AND m.workspace_id = f.workspace_id AND m.segment_id = f.segment_id
  AND m.profile_id IN (f.merged_profile_id, f.profile_id);
INSERT INTO segment_members SELECT tenant_id, workspace_id, segment_id, profile_id, entered_at FROM ingest_frozen_members;
DROP TABLE ingest_frozen_members;
DROP TABLE ingest_frozen_moves;

/* @name ingest_record_conflicts */
INSERT INTO identity_conflicts
SELECT tenant_id, workspace_id, profile_id, other_profile_id, identifier_type, reason, event_id, $now::TIMESTAMP
FROM ingest_conflicts;

/* @name ingest_assign_profiles */
-- The profile each event goes to: what every step after resolution reads.
-- A repeat resolved on its own (ingest_set_repeats) goes where it was resolved, not with its set.
CREATE TEMP TABLE ingest_event_profiles AS
SELECT s.seq, coalesce(o.profile_id, r.profile_id) AS profile_id
FROM ingest_event_sets s
JOIN ingest_resolution r USING (set_id)
LEFT JOIN ingest_repeat_resolution o
  ON o.event_offset = s.seq - (SELECT min(rowid) FROM ingest_checked);

/* @name ingest_insert_events */
-- properties.identifiers is replaced by the keys: no identifier value is stored with an event.
INSERT INTO events (tenant_id, workspace_id, event_id, event_name, dedup_key, dedup_hash, profile_id, source,
  occured_at, received_at, properties, identifier_keys, ingested_at)
SELECT a.tenant_id, a.workspace_id, a.event_id, a.event_name, a.dedup_key, a.dedup_hash, p.profile_id, a.source,
  a.occured_at, a.received_at,
  CASE WHEN a.properties IS NULL THEN '{}'::JSON
       WHEN json_exists(a.properties, '$.identifiers') THEN json_merge_patch(a.properties, '{"identifiers":null}')
       ELSE a.properties END,
  list_transform(k.key_ids, id -> l.keys[id]), $now::TIMESTAMP
FROM ingest_accepted a JOIN ingest_event_profiles p USING (seq) JOIN ingest_event_keys k USING (seq)
CROSS JOIN ingest_key_lists l;

/* @name ingest_consent_choices_present */
SELECT EXISTS (SELECT 1 FROM ingest_accepted WHERE json_exists(properties, '$.consent')) AS present;

/* @name ingest_queue_revocations */
-- Before the batch's choices join the ledger: each profile whose consent to a category its
-- workspace names goes from granted to denied at one of the batch's choices newer than its
-- current one gets one `consent.changed` delivery naming the categories revoked (ids and
-- categories only). The current choice is the ledger's newest, or the workspace's default where
-- it has none; the batch's choices follow it in time, so a grant and its revocation in one batch
-- are announced as they would be in two. Only the ledgers of the batch's choosing profiles (and
-- of those merged into them) are read.
INSERT INTO webhook_outbox (webhook_id, tenant_id, workspace_id, segment_id, profile_id, type, backfill, created_at,
  status, attempts, revoked_categories)
WITH chosen AS (
  SELECT a.tenant_id, a.workspace_id, p.profile_id, a.choice.key AS category, a.choice.value AS granted,
    a.occured_at AS chosen_at, a.event_id
  FROM (
    SELECT seq, tenant_id, workspace_id, occured_at, event_id,
      unnest(map_entries(TRY_CAST(json_extract(properties, '$.consent') AS MAP(VARCHAR, BOOLEAN)))) AS choice
    FROM ingest_accepted
    WHERE json_exists(properties, '$.consent')
  ) a JOIN ingest_event_profiles p USING (seq)
  WHERE a.choice.value IS NOT NULL
),
ledger_owners AS (
  SELECT DISTINCT profile_id AS ledger_profile_id, profile_id FROM chosen
  UNION
  SELECT m.profile_id, m.merged_into FROM profiles m
  WHERE m.merged_into IN (SELECT profile_id FROM chosen)
),
current_choice AS (
  SELECT l.tenant_id, l.workspace_id, o.profile_id, l.category,
    arg_max(l.granted, (l.chosen_at, l.event_id)) AS granted, max(l.chosen_at) AS chosen_at
  FROM consent_ledger l JOIN ledger_owners o ON o.ledger_profile_id = l.profile_id
  GROUP BY ALL
),
steps AS (
  SELECT k.tenant_id, k.workspace_id, k.profile_id, k.category, k.granted,
    coalesce(lag(k.granted) OVER choices, c.granted, w.consent_default = 'allow') AS was_granted
  FROM chosen k
  JOIN workspaces w ON w.tenant_id = k.tenant_id AND w.workspace_id = k.workspace_id
    AND list_contains(w.consent_categories, k.category)
  LEFT JOIN current_choice c ON c.tenant_id = k.tenant_id AND c.workspace_id = k.workspace_id
    AND c.profile_id = k.profile_id AND c.category = k.category
  WHERE c.chosen_at IS NULL OR k.chosen_at > c.chosen_at
  WINDOW choices AS (PARTITION BY k.tenant_id, k.workspace_id, k.profile_id, k.category
    ORDER BY k.chosen_at, k.event_id)
)
SELECT 'msg_' || replace(gen_random_uuid()::VARCHAR, '-', ''), tenant_id, workspace_id, NULL, profile_id,
  'consent.changed', false, $now::TIMESTAMP, 'pending', 0, list_sort(list(DISTINCT category))
FROM steps
WHERE was_granted AND NOT granted
GROUP BY tenant_id, workspace_id, profile_id;

/* @name ingest_record_consent */
-- Each stored event's consent choices (`properties.consent`: category → granted, as the collector
-- writes it for Segment's and RudderStack's shapes) go to its profile's ledger; a value that is
-- not a boolean, or a key that is no category name, is left out (privacy/consent.ts).
INSERT INTO consent_ledger
SELECT a.tenant_id, a.workspace_id, p.profile_id, a.choice.key, a.choice.value, a.occured_at, a.event_id, a.source
FROM (
  SELECT seq, tenant_id, workspace_id, occured_at, event_id, source,
    unnest(map_entries(TRY_CAST(json_extract(properties, '$.consent') AS MAP(VARCHAR, BOOLEAN)))) AS choice
  FROM ingest_accepted
  WHERE json_exists(properties, '$.consent')
) a JOIN ingest_event_profiles p USING (seq)
WHERE a.choice.value IS NOT NULL AND regexp_full_match(a.choice.key, '[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}');

/* @name ingest_touch_profiles */
-- Appended, never updated in place (migration 019): readers take the greatest.
INSERT INTO profile_last_seen
SELECT a.tenant_id, a.workspace_id, e.profile_id, max(a.occured_at)
FROM ingest_accepted a JOIN ingest_event_profiles e USING (seq)
GROUP BY ALL;

/* @name ingest_record_rejections */
INSERT INTO rejected_events
SELECT tenant_id, workspace_id, event_id, event_name, reason, (CAST($paths AS JSON)::VARCHAR[])[file_index], received_at,
  $now::TIMESTAMP
FROM (
  SELECT tenant_id, workspace_id, event_id, event_name, reject_reason AS reason, file_index, received_at
  FROM ingest_checked WHERE reject_reason IS NOT NULL
  UNION ALL
  SELECT tenant_id, workspace_id, event_id, event_name, 'no_identifiers', file_index, received_at
  FROM ingest_accepted a WHERE NOT EXISTS (SELECT 1 FROM ingest_event_keys k WHERE k.seq = a.seq)
);

/* @name ingest_batch_counts */
-- The lines' counts in one pass over them: nine scalar subqueries are nine relations whose join
-- order DuckDB's optimizer searched, 18 ms of planning for a statement that runs in 2.
SELECT
  count(*) AS lines,
  count(*) FILTER (WHERE reject_reason IS NULL) AS valid,
  (SELECT count(*) FROM ingest_accepted) AS first_seen,
  (SELECT count(*) FROM ingest_erased) AS erased,
  (SELECT count(*) FROM ingest_event_profiles) AS stored,
  (SELECT count(*) FROM ingest_new_profiles) AS new_profiles,
  count(*) FILTER (WHERE reject_reason IS NOT NULL) AS rejected,
  count(*) FILTER (WHERE reject_reason = 'unparsable_line') AS unparsable,
  max(received_at) AS last_received_at
FROM ingest_checked;

/* @name ingest_record_files */
INSERT INTO ingested_files
SELECT path, size, sha256, lines, $now::TIMESTAMP
FROM (SELECT unnest(CAST($rows AS JSON)::STRUCT(path VARCHAR, size BIGINT, sha256 VARCHAR, lines INTEGER)[], recursive := true));

/* @name ingest_file_line_counts */
SELECT (CAST($paths AS JSON)::VARCHAR[])[file_index] AS path, count(*) AS lines FROM ingest_checked GROUP BY file_index;

/* @name ingest_update_stats */
UPDATE ingest_stats SET
  batches = batches + 1, files = files + $files, events_ingested = events_ingested + $stored,
  duplicates = duplicates + $duplicates, rejected = rejected + $rejected, unparsable_lines = unparsable_lines + $unparsable,
  dropped_identifiers = dropped_identifiers + $dropped_identifiers,
  last_batch_at = $now::TIMESTAMP, last_received_at = greatest(last_received_at, $last_received_at::TIMESTAMP)
WHERE id = 1;

/* @name ingest_drop_temporaries */
DROP VIEW IF EXISTS ingest_accepted; DROP VIEW IF EXISTS ingest_candidates; DROP TABLE IF EXISTS ingest_checked; DROP TABLE IF EXISTS ingest_event_profiles;
DROP TABLE IF EXISTS ingest_first_seen; DROP TABLE IF EXISTS ingest_hash_firsts; DROP TABLE IF EXISTS ingest_contested;
DROP TABLE IF EXISTS ingest_keyed_lines;
DROP TABLE IF EXISTS ingest_identifiers; DROP TABLE IF EXISTS ingest_id_map; DROP TABLE IF EXISTS ingest_values;
DROP TABLE IF EXISTS ingest_lookup_pads; DROP TABLE IF EXISTS ingest_js_normalized; DROP TABLE IF EXISTS ingest_encrypted;
DROP TABLE IF EXISTS ingest_to_encrypt; DROP TABLE IF EXISTS ingest_event_keys;
DROP TABLE IF EXISTS ingest_key_lists;
DROP TABLE IF EXISTS ingest_sets; DROP TABLE IF EXISTS ingest_event_sets; DROP TABLE IF EXISTS ingest_resolution; DROP TABLE IF EXISTS ingest_repeat_resolution; DROP TABLE IF EXISTS ingest_new_profiles; DROP TABLE IF EXISTS ingest_new_identifiers;
DROP TABLE IF EXISTS ingest_merges; DROP TABLE IF EXISTS ingest_conflicts; DROP TABLE IF EXISTS ingest_erased;
DROP TABLE IF EXISTS ingest_known; DROP TABLE IF EXISTS ingest_set_keys; DROP TABLE IF EXISTS ingest_settled;
DROP TABLE IF EXISTS ingest_open_known; DROP TABLE IF EXISTS ingest_fresh; DROP TABLE IF EXISTS ingest_stored_keys;

/* @name ingest_stats */
SELECT batches, files, events_ingested, duplicates, rejected, unparsable_lines, dropped_identifiers, last_batch_at, last_received_at
FROM ingest_stats WHERE id = 1;

/* @name ingest_tenant_rules */
SELECT t.tenant_id, t.identifier_type, t.max_per_profile,
  coalesce((SELECT list(p.value) FROM placeholders p
            WHERE p.tenant_id = t.tenant_id AND p.identifier_type IN (t.identifier_type, '*')), []) AS placeholders
FROM identifier_types t
WHERE list_contains(CAST($tenants AS JSON)::VARCHAR[], t.tenant_id);
