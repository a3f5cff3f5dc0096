/* @name get_metric_definition */
SELECT metric_name, for_segments FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_scope
  AND metric_name = $metric_name AND event_name = $event_name;

/* @name metric_definitions_named */
SELECT value_kind, aggregation FROM metric_definitions
WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name insert_metric_definition */
INSERT INTO metric_definitions (tenant_id, workspace_scope, metric_name, event_name, value_kind, value_path,
  aggregation, keep, window_days, display_name, description, created_at, event_filter, for_segments)
VALUES ($tenant_id, $workspace_scope, $metric_name, $event_name, $value_kind, $value_path,
  $aggregation, $keep, $window_days, $display_name, $description, $now::TIMESTAMP, NULL, false);

/* @name list_metric_definitions_page */
-- Keyset paging on (metric_name, event_name, workspace_scope); $after_* are NULL on the first page.
-- A definition computed for segments names them (segment_behaviours).
SELECT workspace_scope AS workspace_id, metric_name, event_name, value_kind, value_path, display_name,
  description, window_days, aggregation, keep, created_at, event_filter,
  CASE WHEN for_segments THEN (
    SELECT coalesce(list(b.segment_id ORDER BY b.segment_id), []) FROM segment_behaviours b
    WHERE b.tenant_id = d.tenant_id AND b.workspace_id = d.workspace_scope AND b.metric_name = d.metric_name
  ) END AS computed_for_segments
FROM metric_definitions d
WHERE tenant_id = $tenant_id AND ($workspace_id IS NULL OR workspace_scope IN ('*', $workspace_id))
  AND ($after_metric IS NULL
    OR (metric_name, event_name, workspace_scope) > ($after_metric, $after_event, $after_scope))
ORDER BY metric_name, event_name, workspace_scope
LIMIT $limit;

/* @name metric_scopes_besides */
-- Where a metric is still collected once one of its definitions is deleted: the other definitions' scopes.
SELECT DISTINCT workspace_scope FROM metric_definitions
WHERE tenant_id = $tenant_id AND metric_name = $metric_name
  AND NOT (workspace_scope = $workspace_scope AND event_name = $event_name);

/* @name delete_metric_definition */
DELETE FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_scope
  AND metric_name = $metric_name AND event_name = $event_name;

/* @name metric_kinds_for_workspace */
-- The metrics a rule may compare by name: those computed for segments are named by their
-- behaviour, never by their metric name.
SELECT metric_name, any_value(value_kind) AS value_kind, any_value(aggregation) AS aggregation
FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope IN ('*', $workspace_id) AND NOT for_segments
GROUP BY metric_name;

/* @name metrics_discard_frozen */
-- A metric name defined again after all its definitions were deleted starts over: the values its
-- deleted definitions left behind may be of another kind.
DELETE FROM metric_contributions WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name metrics_discard_frozen_strings */
DELETE FROM metric_strings WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name metrics_discard_vector_entries */
UPDATE profile_metric_vectors SET
  number_values = map_from_entries(list_filter(map_entries(number_values), entry -> entry.key <> $metric_name)),
  string_values = map_from_entries(list_filter(map_entries(string_values), entry -> entry.key <> $metric_name)),
  list_values = map_from_entries(list_filter(map_entries(list_values), entry -> entry.key <> $metric_name)),
  string_entries = map_from_entries(list_filter(map_entries(string_entries), entry -> entry.key <> $metric_name))
WHERE tenant_id = $tenant_id;
/* @name metrics_freeze_numbers */
-- A deleted definition's count or sum stays as it is now, its window no longer moving (design §12).
INSERT INTO metric_contributions
SELECT tenant_id, workspace_id, profile_id, metric_name, 'frozen|' || contributor, NULL, NULL,
  coalesce(sum(amount) FILTER (WHERE window_days IS NULL OR day > $today::DATE - window_days), 0)
FROM metric_contributions
WHERE tenant_id = $tenant_id AND metric_name = $metric_name AND contributor = $contributor
GROUP BY ALL;

/* @name metrics_drop_contributor */
DELETE FROM metric_contributions
WHERE tenant_id = $tenant_id AND metric_name = $metric_name AND contributor = $contributor;

/* @name metrics_freeze_strings */
UPDATE metric_strings SET contributor = 'frozen|' || contributor
WHERE tenant_id = $tenant_id AND metric_name = $metric_name AND contributor = $contributor;

/* @name metrics_pending_definitions */
SELECT count(*) AS pending FROM metric_definitions WHERE backfilled_at IS NULL;

/* @name metrics_create_work_tables */
-- The definitions a step applies, the profiles whose values it changes, and those of them that a
-- merge of the step's batch took away, with their survivors (metrics_follow_merges): every other
-- touched profile is live.
CREATE TEMP TABLE metric_touched (tenant_id VARCHAR, workspace_id VARCHAR, profile_id VARCHAR);
CREATE TEMP TABLE metric_merged_away (tenant_id VARCHAR, workspace_id VARCHAR, profile_id VARCHAR, survivor_profile_id VARCHAR);
CREATE TEMP TABLE metric_applying (
  tenant_id VARCHAR, workspace_scope VARCHAR, metric_name VARCHAR, event_name VARCHAR, value_kind VARCHAR,
  json_path VARCHAR, recent_keep INTEGER, window_days INTEGER, contributor VARCHAR, event_filter event_condition[]
);
/* @name metrics_apply_backfilled */
INSERT INTO metric_applying
SELECT tenant_id, workspace_scope, metric_name, event_name, value_kind, '$.' || value_path[12:],
  CASE WHEN aggregation = 'recent' THEN coalesce(keep, 5) END, window_days, event_name || '|' || workspace_scope,
  CAST(event_filter::JSON AS event_condition[])
FROM metric_definitions WHERE backfilled_at IS NOT NULL;

/* @name metrics_apply_pending */
INSERT INTO metric_applying
SELECT tenant_id, workspace_scope, metric_name, event_name, value_kind, '$.' || value_path[12:],
  CASE WHEN aggregation = 'recent' THEN coalesce(keep, 5) END, window_days, event_name || '|' || workspace_scope,
  CAST(event_filter::JSON AS event_condition[])
FROM metric_definitions WHERE backfilled_at IS NULL;

/* @name metrics_sources_from_batch */
-- Segments read nothing but metric values, so a profile is touched (its values computed and its
-- segments evaluated again) only where they may change: it is new in the batch (it gets its row,
-- empty until some value arrives), an event some definition reads was stored for it
-- (metrics_add_sources), or it took part in a merge (metrics_follow_merges). Only the events some
-- definition reads are copied, with the profile they now belong to.
INSERT INTO metric_touched SELECT tenant_id, workspace_id, profile_id FROM ingest_new_profiles;
CREATE TEMP TABLE metric_sources AS
SELECT a.tenant_id, a.workspace_id, p.profile_id, a.event_name, a.occured_at, a.properties
FROM ingest_accepted a JOIN ingest_event_profiles p USING (seq)
WHERE EXISTS (
  SELECT 1 FROM metric_applying d
  WHERE d.tenant_id = a.tenant_id AND d.event_name = a.event_name AND d.workspace_scope IN ('*', a.workspace_id)
);

/* @name metrics_sources_from_events */
-- Stored events of the definitions being backfilled, each with its profile's survivor: an event
-- keeps the profile it was stored with (ingest does not rewrite events on a merge).
CREATE TEMP TABLE metric_sources AS
SELECT e.tenant_id, e.workspace_id, coalesce(p.merged_into, e.profile_id) AS profile_id, e.event_name, e.occured_at,
  e.properties
FROM events e
LEFT JOIN profiles p ON p.tenant_id = e.tenant_id AND p.workspace_id = e.workspace_id AND p.profile_id = e.profile_id
WHERE EXISTS (
  SELECT 1 FROM metric_applying d
  WHERE d.tenant_id = e.tenant_id AND d.event_name = e.event_name AND d.workspace_scope IN ('*', e.workspace_id)
);

/* @name metrics_restart_applying */
-- A backfill replaces whatever its definitions, or deleted ones of the same key, left before.
INSERT INTO metric_touched
SELECT c.tenant_id, c.workspace_id, c.profile_id FROM metric_contributions c JOIN metric_applying d
  ON c.tenant_id = d.tenant_id AND c.metric_name = d.metric_name AND c.contributor IN (d.contributor, 'frozen|' || d.contributor)
UNION
SELECT s.tenant_id, s.workspace_id, s.profile_id FROM metric_strings s JOIN metric_applying d
  ON s.tenant_id = d.tenant_id AND s.metric_name = d.metric_name AND s.contributor IN (d.contributor, 'frozen|' || d.contributor);
DELETE FROM metric_contributions c USING metric_applying d
WHERE c.tenant_id = d.tenant_id AND c.metric_name = d.metric_name AND c.contributor IN (d.contributor, 'frozen|' || d.contributor);
DELETE FROM metric_strings s USING metric_applying d
WHERE s.tenant_id = d.tenant_id AND s.metric_name = d.metric_name AND s.contributor IN (d.contributor, 'frozen|' || d.contributor);

/* @name metrics_add_sources */
-- Each event's value for each definition that reads it, its properties parsed once: a count's 1,
-- a number, or a string. Non-numbers are ignored by property_number and non-strings by
-- property_string (design §12); a definition computed for a segment reads only the events its
-- filter lets through (event_properties_match, migration 022). Appended to the inputs, one row a day and contributor (or distinct
-- string) of the batch; a batch's step advances the values from the same rows.
INSERT INTO metric_touched SELECT DISTINCT tenant_id, workspace_id, profile_id FROM metric_sources;
CREATE TEMP TABLE metric_source_values AS
SELECT tenant_id, workspace_id, profile_id, metric_name, contributor, value_kind, window_days, recent_keep, occured_at,
  CASE WHEN value_kind = 'count' THEN 1.0 WHEN value_kind = 'property_number' THEN value::DOUBLE END AS amount,
  CASE WHEN value_kind = 'property_string' THEN json_extract_string(value, '$') END AS string_value
FROM (
  SELECT e.tenant_id, e.workspace_id, e.profile_id, d.metric_name, d.contributor, d.value_kind, d.window_days,
    d.recent_keep, e.occured_at, json_extract(e.properties, d.json_path) AS value
  FROM metric_sources e
  JOIN metric_applying d ON d.tenant_id = e.tenant_id AND d.event_name = e.event_name AND d.workspace_scope IN ('*', e.workspace_id)
  WHERE event_properties_match(e.properties, d.event_filter)
)
WHERE value_kind = 'count'
   OR (value_kind = 'property_number' AND json_type(value) IN ('BIGINT', 'UBIGINT', 'DOUBLE'))
   OR (value_kind = 'property_string' AND json_type(value) = 'VARCHAR');
INSERT INTO metric_contributions
SELECT tenant_id, workspace_id, profile_id, metric_name, contributor,
  CASE WHEN window_days IS NOT NULL THEN occured_at::DATE END AS day, window_days, sum(amount)
FROM metric_source_values
WHERE value_kind <> 'property_string'
GROUP BY ALL;
INSERT INTO metric_strings
SELECT tenant_id, workspace_id, profile_id, metric_name, contributor, recent_keep, string_value, max(occured_at)
FROM metric_source_values
WHERE value_kind = 'property_string'
GROUP BY ALL;
UPDATE metric_inputs_compaction SET appended_since = appended_since + (SELECT count(*) FROM metric_sources) WHERE id = 1;
/* @name metrics_follow_merges */
-- A merged profile's values join its survivor's (metrics_advance_values), which are computed
-- again. Its inputs stay under its own id until they are compacted (metrics_compaction_take_*
-- takes each to its survivor): moving them here read both input tables whole each batch.
INSERT INTO metric_touched
SELECT tenant_id, workspace_id, merged_profile_id FROM ingest_merges
UNION ALL
SELECT tenant_id, workspace_id, survivor_profile_id FROM ingest_merges;
INSERT INTO metric_merged_away SELECT tenant_id, workspace_id, merged_profile_id, survivor_profile_id FROM ingest_merges;
/* @name metrics_touch_expired */
INSERT INTO metric_touched
SELECT DISTINCT tenant_id, workspace_id, profile_id FROM metric_contributions
WHERE window_days IS NOT NULL AND day <= $today::DATE - window_days;

/* @name metrics_zero_expired */
-- An expired bucket becomes a zero without a day: the profile keeps the metric, at 0.
UPDATE metric_contributions SET day = NULL, amount = 0
WHERE window_days IS NOT NULL AND day <= $today::DATE - window_days;

/* @name metrics_decayed_through */
SELECT decayed_through::VARCHAR AS decayed_through FROM metric_decay WHERE id = 1;

/* @name metrics_mark_decayed */
UPDATE metric_decay SET decayed_through = $today::DATE WHERE id = 1;

/* @name metrics_inputs_rows */
SELECT compacted_rows, appended_since, parts, next_part, contributions_end, strings_end
FROM metric_inputs_compaction WHERE id = 1;

/* @name metrics_compaction_rows */
SELECT (SELECT count(*) FROM metric_contributions) + (SELECT count(*) FROM metric_strings) AS input_rows;

/* @name metrics_compaction_take_contributions */
-- Compaction folds the inputs into one row a day and contributor, and only the strings that can
-- still show, each under its survivor: what batches appended since the last compaction, and
-- inputs left under profiles merged since. It takes one run of rows at a time (a range of rowids),
-- each in its own transaction, so that what it holds and how long it keeps batches waiting are
-- bounded whatever the store's size, and a part's checkpoint rewrites only the row groups of its
-- run (parts by a hash of the profile id deleted rows in every row group, and each part's
-- checkpoint rewrote both tables whole). A profile keeps a row a key in each run it has rows in.
-- Values do not change, and recomputing reads inputs under merged ids too
-- (metrics_recompute_values), so nothing waits for a compaction. The parameters are typed: as
-- bound, a filter on them was not pushed into the scan.
CREATE TEMP TABLE metric_compaction_contributions AS
SELECT c.rowid AS taken_rowid, c.* REPLACE (coalesce(p.merged_into, c.profile_id) AS profile_id)
FROM metric_contributions c
LEFT JOIN (FROM profiles WHERE merged_into IS NOT NULL) p
  ON p.tenant_id = c.tenant_id AND p.workspace_id = c.workspace_id AND p.profile_id = c.profile_id
WHERE c.rowid >= $from::BIGINT AND c.rowid < $to::BIGINT;

/* @name metrics_compaction_put_contributions */
DELETE FROM metric_contributions WHERE rowid IN (SELECT taken_rowid FROM metric_compaction_contributions);
INSERT INTO metric_contributions
SELECT tenant_id, workspace_id, profile_id, metric_name, contributor, day, window_days, sum(amount)
FROM metric_compaction_contributions
GROUP BY tenant_id, workspace_id, profile_id, metric_name, contributor, day, window_days;
DROP TABLE metric_compaction_contributions;

/* @name metrics_compaction_take_strings */
CREATE TEMP TABLE metric_compaction_strings AS
SELECT s.rowid AS taken_rowid, s.* REPLACE (coalesce(p.merged_into, s.profile_id) AS profile_id)
FROM metric_strings s
LEFT JOIN (FROM profiles WHERE merged_into IS NOT NULL) p
  ON p.tenant_id = s.tenant_id AND p.workspace_id = s.workspace_id AND p.profile_id = s.profile_id
WHERE s.rowid >= $from::BIGINT AND s.rowid < $to::BIGINT;

/* @name metrics_compaction_put_strings */
DELETE FROM metric_strings WHERE rowid IN (SELECT taken_rowid FROM metric_compaction_strings);
INSERT INTO metric_strings
SELECT * FROM (
  SELECT tenant_id, workspace_id, profile_id, metric_name, contributor, recent_keep, value, max(seen_at) AS seen_at
  FROM metric_compaction_strings
  GROUP BY tenant_id, workspace_id, profile_id, metric_name, contributor, recent_keep, value
)
QUALIFY row_number() OVER (
  PARTITION BY tenant_id, workspace_id, profile_id, metric_name, contributor ORDER BY seen_at DESC, value DESC
) <= coalesce(recent_keep, 1);
DROP TABLE metric_compaction_strings;

/* @name metrics_compaction_start */
UPDATE metric_inputs_compaction SET parts = $parts, next_part = 0,
  contributions_end = (SELECT coalesce(max(rowid) + 1, 0) FROM metric_contributions),
  strings_end = (SELECT coalesce(max(rowid) + 1, 0) FROM metric_strings)
WHERE id = 1;

/* @name metrics_compaction_next_part */
UPDATE metric_inputs_compaction SET next_part = next_part + 1 WHERE id = 1;

/* @name metrics_compaction_done */
UPDATE metric_inputs_compaction
SET compacted_rows = (SELECT count(*) FROM metric_contributions) + (SELECT count(*) FROM metric_strings),
  appended_since = 0, parts = 0, next_part = 0, contributions_end = 0, strings_end = 0
WHERE id = 1;
/* @name metrics_take_touched_rows */
-- The touched profiles' rows of values, taken out to be written again: a merged profile's are
-- read for its survivor's values. Only what advancing reads is copied. The rows are found by
-- their keys alone, then read by rowid: a join on the keys reads the maps of every stored row
-- before it filters (128 against 24 + 19 ms for 40 of 650k rows), while a join on rowid is pruned
-- to the row groups and vectors holding them. Deleted and inserted again, not updated, for the
-- checkpoint's sake (ingest_apply_merges_to_profiles).
CREATE TEMP TABLE metric_touched_profiles AS SELECT DISTINCT tenant_id, workspace_id, profile_id FROM metric_touched;
CREATE TEMP TABLE metric_replaced_rowids AS
SELECT v.rowid AS replaced_rowid
FROM profile_metric_vectors v SEMI JOIN metric_touched_profiles t USING (tenant_id, workspace_id, profile_id);
CREATE TEMP TABLE metric_replaced AS
SELECT v.rowid AS replaced_rowid, v.tenant_id, v.workspace_id, v.profile_id, v.number_values, v.string_entries
FROM profile_metric_vectors v SEMI JOIN metric_replaced_rowids r ON v.rowid = r.replaced_rowid;
DROP TABLE metric_replaced_rowids;
DELETE FROM profile_metric_vectors WHERE rowid IN (SELECT replaced_rowid FROM metric_replaced);

/* @name metrics_advance_values */
-- A batch's values: each touched profile's previous ones (and those of the profiles merged into
-- it) advanced by the batch's events, so no stored input is read. Counts and sums add what falls
-- in the window (the values were brought to today by the day's decay, metrics_touch_expired);
-- strings keep the newest distinct values, as metrics_recompute_values does.
CREATE TEMP TABLE metric_string_values AS
SELECT tenant_id, workspace_id, profile_id, metric_name, value, max(seen_at) AS seen_at, max(recent_keep) AS recent_keep
FROM (
  SELECT r.tenant_id, r.workspace_id, coalesce(a.survivor_profile_id, r.profile_id) AS profile_id, r.metric_name,
    r.recent_keep, r.entry.seen_at AS seen_at, r.entry.value AS value
  FROM (
    SELECT tenant_id, workspace_id, profile_id, metric.key AS metric_name, metric.value.recent_keep AS recent_keep,
      unnest(metric.value.entries) AS entry
    FROM (SELECT tenant_id, workspace_id, profile_id, unnest(map_entries(string_entries)) AS metric FROM metric_replaced)
  ) r
  LEFT JOIN metric_merged_away a ON a.tenant_id = r.tenant_id AND a.workspace_id = r.workspace_id AND a.profile_id = r.profile_id
  UNION ALL
  SELECT e.tenant_id, e.workspace_id, coalesce(a.survivor_profile_id, e.profile_id), e.metric_name, e.recent_keep,
    e.occured_at, e.string_value
  FROM metric_source_values e
  LEFT JOIN metric_merged_away a ON a.tenant_id = e.tenant_id AND a.workspace_id = e.workspace_id AND a.profile_id = e.profile_id
  WHERE e.value_kind = 'property_string'
)
GROUP BY tenant_id, workspace_id, profile_id, metric_name, value;
CREATE TEMP TABLE metric_numbers AS
SELECT tenant_id, workspace_id, profile_id, metric_name, sum(amount) AS number_value
FROM (
  SELECT r.tenant_id, r.workspace_id, coalesce(a.survivor_profile_id, r.profile_id) AS profile_id,
    r.entry.key AS metric_name, r.entry.value AS amount
  FROM (SELECT tenant_id, workspace_id, profile_id, unnest(map_entries(number_values)) AS entry FROM metric_replaced) r
  LEFT JOIN metric_merged_away a ON a.tenant_id = r.tenant_id AND a.workspace_id = r.workspace_id AND a.profile_id = r.profile_id
  UNION ALL
  SELECT e.tenant_id, e.workspace_id, coalesce(a.survivor_profile_id, e.profile_id), e.metric_name,
    CASE WHEN e.window_days IS NOT NULL AND e.occured_at::DATE <= $today::DATE - e.window_days THEN 0 ELSE e.amount END
  FROM metric_source_values e
  LEFT JOIN metric_merged_away a ON a.tenant_id = e.tenant_id AND a.workspace_id = e.workspace_id AND a.profile_id = e.profile_id
  WHERE e.value_kind <> 'property_string'
)
GROUP BY tenant_id, workspace_id, profile_id, metric_name;

/* @name metrics_resolve_touched */
-- A pass's touched profiles may be profiles merged away since the inputs were last compacted (an
-- expired bucket or a backfill's input under a merged profile's id): their survivors are touched.
CREATE TEMP TABLE metric_touched_survivors AS
SELECT DISTINCT t.tenant_id, t.workspace_id, coalesce(p.merged_into, t.profile_id) AS profile_id
FROM metric_touched t
LEFT JOIN profiles p ON p.tenant_id = t.tenant_id AND p.workspace_id = t.workspace_id AND p.profile_id = t.profile_id;
DELETE FROM metric_touched;
INSERT INTO metric_touched SELECT * FROM metric_touched_survivors;
DROP TABLE metric_touched_survivors;

/* @name metrics_recompute_values */
-- A pass's values, from every stored input of the touched profiles: their own, and those still
-- under the ids of profiles merged into them (compaction moves them to the survivor in time).
-- After a backfill, or when windows decay.
CREATE TEMP TABLE metric_input_profiles AS
SELECT tenant_id, workspace_id, profile_id AS input_profile_id, profile_id FROM metric_touched_profiles
UNION ALL
SELECT p.tenant_id, p.workspace_id, p.profile_id, p.merged_into
FROM profiles p
JOIN metric_touched_profiles t ON p.tenant_id = t.tenant_id AND p.workspace_id = t.workspace_id AND p.merged_into = t.profile_id;
CREATE TEMP TABLE metric_string_values AS
SELECT i.tenant_id, i.workspace_id, i.profile_id, s.metric_name, s.value, max(s.seen_at) AS seen_at, max(s.recent_keep) AS recent_keep
FROM metric_strings s
JOIN metric_input_profiles i ON s.tenant_id = i.tenant_id AND s.workspace_id = i.workspace_id AND s.profile_id = i.input_profile_id
GROUP BY i.tenant_id, i.workspace_id, i.profile_id, s.metric_name, s.value;
CREATE TEMP TABLE metric_numbers AS
SELECT i.tenant_id, i.workspace_id, i.profile_id, c.metric_name,
  coalesce(sum(c.amount) FILTER (WHERE c.window_days IS NULL OR c.day > $today::DATE - c.window_days), 0) AS number_value
FROM metric_contributions c
JOIN metric_input_profiles i ON c.tenant_id = i.tenant_id AND c.workspace_id = i.workspace_id AND c.profile_id = i.input_profile_id
GROUP BY i.tenant_id, i.workspace_id, i.profile_id, c.metric_name;
/* @name metrics_store_values */
-- Every live touched profile gets its row, with empty maps when it has no value yet. Definitions
-- sharing a name combine: counts and sums add, latest is the newest, recent the newest distinct
-- values (design §12); ties on time go to the greater value, so the result does not depend on
-- arrival order (entries sort as structs, time then value: an ordered list() was five times
-- slower). A touched profile is live unless this step's batch merged it away: its events'
-- and new profiles are survivors, and the inputs of expired windows and backfills belong to live
-- profiles (compacted under survivors; an erasure deletes them).
INSERT INTO profile_metric_vectors
SELECT t.tenant_id, t.workspace_id, t.profile_id,
  coalesce(n.number_values, MAP {}), coalesce(s.string_values, MAP {}), coalesce(s.list_values, MAP {}),
  coalesce(s.string_entries, MAP {}), $now::TIMESTAMP
FROM metric_touched_profiles t
ANTI JOIN metric_merged_away a ON a.tenant_id = t.tenant_id AND a.workspace_id = t.workspace_id AND a.profile_id = t.profile_id
LEFT JOIN (
  SELECT tenant_id, workspace_id, profile_id, map_from_entries(list({'key': metric_name, 'value': number_value})) AS number_values
  FROM metric_numbers
  GROUP BY tenant_id, workspace_id, profile_id
) n ON n.tenant_id = t.tenant_id AND n.workspace_id = t.workspace_id AND n.profile_id = t.profile_id
LEFT JOIN (
  SELECT tenant_id, workspace_id, profile_id,
    map_from_entries(coalesce(list({'key': metric_name, 'value': entries[1].value}) FILTER (WHERE recent_keep IS NULL), [])) AS string_values,
    map_from_entries(coalesce(
      list({'key': metric_name, 'value': list_transform(entries, entry -> entry.value)}) FILTER (WHERE recent_keep IS NOT NULL), []
    )) AS list_values,
    map_from_entries(list({'key': metric_name, 'value': {'recent_keep': recent_keep, 'entries': entries}})) AS string_entries
  FROM (
    SELECT tenant_id, workspace_id, profile_id, metric_name, max(recent_keep) AS recent_keep,
      list_sort(list({'seen_at': seen_at, 'value': value}), 'DESC')[1:coalesce(max(recent_keep), 1)] AS entries
    FROM metric_string_values
    GROUP BY tenant_id, workspace_id, profile_id, metric_name
  )
  GROUP BY tenant_id, workspace_id, profile_id
) s ON s.tenant_id = t.tenant_id AND s.workspace_id = t.workspace_id AND s.profile_id = t.profile_id;

/* @name metrics_drop_work_tables */
DROP TABLE IF EXISTS metric_applying; DROP TABLE IF EXISTS metric_sources; DROP TABLE IF EXISTS metric_source_values;
DROP TABLE IF EXISTS metric_replaced; DROP TABLE IF EXISTS metric_input_profiles;
DROP TABLE IF EXISTS metric_numbers; DROP TABLE IF EXISTS metric_string_values; DROP TABLE IF EXISTS metric_touched;
DROP TABLE IF EXISTS metric_touched_profiles; DROP TABLE IF EXISTS metric_merged_away;
/* @name metrics_mark_backfilled */
UPDATE metric_definitions SET backfilled_at = $now::TIMESTAMP WHERE backfilled_at IS NULL;
