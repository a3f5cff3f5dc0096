/* @name get_metric_definition */
SELECT metric_name FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_scope
  AND metric_name = $metric_name AND event_name = $event_name;

/* @name metric_definitions_named */
SELECT value_kind, aggregation FROM metric_definitions
WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name insert_metric_definition */
INSERT INTO metric_definitions (tenant_id, workspace_scope, metric_name, event_name, value_kind, value_path,
  aggregation, keep, window_days, display_name, description, created_at)
VALUES ($tenant_id, $workspace_scope, $metric_name, $event_name, $value_kind, $value_path,
  $aggregation, $keep, $window_days, $display_name, $description, $now::TIMESTAMP);

/* @name list_metric_definitions_page */
-- Keyset paging on (metric_name, event_name, workspace_scope); $after_* are NULL on the first page.
SELECT workspace_scope AS workspace_id, metric_name, event_name, value_kind, value_path, display_name,
  description, window_days, aggregation, keep, created_at
FROM metric_definitions
WHERE tenant_id = $tenant_id AND ($workspace_id IS NULL OR workspace_scope IN ('*', $workspace_id))
  AND ($after_metric IS NULL
    OR (metric_name, event_name, workspace_scope) > ($after_metric, $after_event, $after_scope))
ORDER BY metric_name, event_name, workspace_scope
LIMIT $limit;

/* @name delete_metric_definition */
DELETE FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_scope
  AND metric_name = $metric_name AND event_name = $event_name;

/* @name metric_kinds_for_workspace */
SELECT metric_name, any_value(value_kind) AS value_kind, any_value(aggregation) AS aggregation
FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope IN ('*', $workspace_id)
GROUP BY metric_name;

/* @name metrics_discard_frozen */
-- A metric name defined again after all its definitions were deleted starts over: the values its
-- deleted definitions left behind may be of another kind.
DELETE FROM metric_contributions WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name metrics_discard_frozen_strings */
DELETE FROM metric_strings WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name metrics_discard_values */
DELETE FROM profile_metrics WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name metrics_discard_vector_entries */
UPDATE profile_metric_vectors SET
  number_values = map_from_entries(list_filter(map_entries(number_values), entry -> entry.key <> $metric_name)),
  string_values = map_from_entries(list_filter(map_entries(string_values), entry -> entry.key <> $metric_name)),
  list_values = map_from_entries(list_filter(map_entries(list_values), entry -> entry.key <> $metric_name))
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
-- merge of the step's batch took away (metrics_follow_merges): every other touched profile is live.
CREATE TEMP TABLE metric_touched (tenant_id VARCHAR, workspace_id VARCHAR, profile_id VARCHAR);
CREATE TEMP TABLE metric_merged_away (tenant_id VARCHAR, workspace_id VARCHAR, profile_id VARCHAR);
CREATE TEMP TABLE metric_applying (
  tenant_id VARCHAR, workspace_scope VARCHAR, metric_name VARCHAR, event_name VARCHAR, value_kind VARCHAR,
  json_path VARCHAR, recent_keep INTEGER, window_days INTEGER, contributor VARCHAR
);

/* @name metrics_apply_backfilled */
INSERT INTO metric_applying
SELECT tenant_id, workspace_scope, metric_name, event_name, value_kind, '$.' || value_path[12:],
  CASE WHEN aggregation = 'recent' THEN coalesce(keep, 5) END, window_days, event_name || '|' || workspace_scope
FROM metric_definitions WHERE backfilled_at IS NOT NULL;

/* @name metrics_apply_pending */
INSERT INTO metric_applying
SELECT tenant_id, workspace_scope, metric_name, event_name, value_kind, '$.' || value_path[12:],
  CASE WHEN aggregation = 'recent' THEN coalesce(keep, 5) END, window_days, event_name || '|' || workspace_scope
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
-- Non-numbers are ignored by property_number and non-strings by property_string (design §12).
INSERT INTO metric_touched SELECT DISTINCT tenant_id, workspace_id, profile_id FROM metric_sources;
INSERT INTO metric_contributions
SELECT e.tenant_id, e.workspace_id, e.profile_id, d.metric_name, d.contributor,
  CASE WHEN d.window_days IS NOT NULL THEN e.occured_at::DATE END AS day, d.window_days,
  sum(CASE WHEN d.value_kind = 'count' THEN 1.0 ELSE json_extract(e.properties, d.json_path)::DOUBLE END)
FROM metric_sources e
JOIN metric_applying d ON d.tenant_id = e.tenant_id AND d.event_name = e.event_name AND d.workspace_scope IN ('*', e.workspace_id)
WHERE d.value_kind = 'count'
   OR (d.value_kind = 'property_number' AND json_type(e.properties, d.json_path) IN ('BIGINT', 'UBIGINT', 'DOUBLE'))
GROUP BY ALL;
INSERT INTO metric_strings
SELECT e.tenant_id, e.workspace_id, e.profile_id, d.metric_name, d.contributor, d.recent_keep,
  json_extract_string(e.properties, d.json_path) AS value, max(e.occured_at)
FROM metric_sources e
JOIN metric_applying d ON d.tenant_id = e.tenant_id AND d.event_name = e.event_name AND d.workspace_scope IN ('*', e.workspace_id)
WHERE d.value_kind = 'property_string' AND json_type(e.properties, d.json_path) = 'VARCHAR'
GROUP BY ALL;

/* @name metrics_follow_merges */
-- A merged profile's inputs move to its survivor, whose values are then computed again. Moved rows
-- are deleted and inserted again, not updated, for the checkpoint's sake (ingest_apply_merges_to_profiles).
CREATE TEMP TABLE metric_moved_contributions AS
SELECT c.rowid AS moved_rowid, c.* REPLACE (m.survivor_profile_id AS profile_id)
FROM metric_contributions c
JOIN ingest_merges m
  ON c.tenant_id = m.tenant_id AND c.workspace_id = m.workspace_id AND c.profile_id = m.merged_profile_id;
DELETE FROM metric_contributions WHERE rowid IN (SELECT moved_rowid FROM metric_moved_contributions);
INSERT INTO metric_contributions SELECT * EXCLUDE (moved_rowid) FROM metric_moved_contributions;
DROP TABLE metric_moved_contributions;
CREATE TEMP TABLE metric_moved_strings AS
SELECT s.rowid AS moved_rowid, s.* REPLACE (m.survivor_profile_id AS profile_id)
FROM metric_strings s
JOIN ingest_merges m
  ON s.tenant_id = m.tenant_id AND s.workspace_id = m.workspace_id AND s.profile_id = m.merged_profile_id;
DELETE FROM metric_strings WHERE rowid IN (SELECT moved_rowid FROM metric_moved_strings);
INSERT INTO metric_strings SELECT * EXCLUDE (moved_rowid) FROM metric_moved_strings;
DROP TABLE metric_moved_strings;
INSERT INTO metric_touched
SELECT tenant_id, workspace_id, merged_profile_id FROM ingest_merges
UNION ALL
SELECT tenant_id, workspace_id, survivor_profile_id FROM ingest_merges;
INSERT INTO metric_merged_away SELECT tenant_id, workspace_id, merged_profile_id FROM ingest_merges;

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

/* @name metrics_compact_touched */
-- One row per day and contributor, and only the strings that can still show, for every touched profile.
CREATE TEMP TABLE metric_touched_profiles AS SELECT DISTINCT tenant_id, workspace_id, profile_id FROM metric_touched;
CREATE TEMP TABLE metric_compacted AS
SELECT c.tenant_id, c.workspace_id, c.profile_id, c.metric_name, c.contributor, c.day, c.window_days, sum(c.amount)
FROM metric_contributions c SEMI JOIN metric_touched_profiles t USING (tenant_id, workspace_id, profile_id)
GROUP BY ALL;
DELETE FROM metric_contributions c USING metric_touched_profiles t
WHERE c.tenant_id = t.tenant_id AND c.workspace_id = t.workspace_id AND c.profile_id = t.profile_id;
INSERT INTO metric_contributions SELECT * FROM metric_compacted;
CREATE TEMP TABLE metric_strings_compacted AS
SELECT * FROM (
  SELECT s.tenant_id, s.workspace_id, s.profile_id, s.metric_name, s.contributor, s.recent_keep, s.value, max(s.seen_at) AS seen_at
  FROM metric_strings s SEMI JOIN metric_touched_profiles t USING (tenant_id, workspace_id, profile_id)
  GROUP BY ALL
)
QUALIFY row_number() OVER (
  PARTITION BY tenant_id, workspace_id, profile_id, metric_name, contributor ORDER BY seen_at DESC, value DESC
) <= coalesce(recent_keep, 1);
DELETE FROM metric_strings s USING metric_touched_profiles t
WHERE s.tenant_id = t.tenant_id AND s.workspace_id = t.workspace_id AND s.profile_id = t.profile_id;
INSERT INTO metric_strings SELECT * FROM metric_strings_compacted;
DELETE FROM profile_metrics m USING metric_touched_profiles t
WHERE m.tenant_id = t.tenant_id AND m.workspace_id = t.workspace_id AND m.profile_id = t.profile_id;

/* @name metrics_recompute_touched */
-- Definitions sharing a name combine: counts and sums add, latest is the newest, recent merges
-- the newest distinct values (design §12). Ties on time go to the greater value, so the result
-- does not depend on arrival order.
INSERT INTO profile_metrics
SELECT c.tenant_id, c.workspace_id, c.profile_id, c.metric_name,
  coalesce(sum(c.amount) FILTER (WHERE c.window_days IS NULL OR c.day > $today::DATE - c.window_days), 0),
  NULL, NULL, $now::TIMESTAMP
FROM metric_contributions c SEMI JOIN metric_touched_profiles t USING (tenant_id, workspace_id, profile_id)
GROUP BY ALL
UNION ALL
SELECT tenant_id, workspace_id, profile_id, metric_name,
  NULL,
  CASE WHEN max(recent_keep) IS NULL THEN list_sort(list({'seen_at': seen_at, 'value': value}), 'DESC')[1].value END,
  CASE WHEN max(recent_keep) IS NOT NULL
    THEN list_transform(list_sort(list({'seen_at': seen_at, 'value': value}), 'DESC')[1:max(recent_keep)], entry -> entry.value)
  END,
  $now::TIMESTAMP
FROM (
  SELECT s.tenant_id, s.workspace_id, s.profile_id, s.metric_name, s.value, max(s.seen_at) AS seen_at,
    max(s.recent_keep) AS recent_keep
  FROM metric_strings s SEMI JOIN metric_touched_profiles t USING (tenant_id, workspace_id, profile_id)
  GROUP BY ALL
)
GROUP BY tenant_id, workspace_id, profile_id, metric_name;

/* @name metrics_vectorize_touched */
-- Every live touched profile gets its row, with empty maps when it has no value yet. A touched
-- profile is live unless this step's batch merged it away: its events' and new profiles are
-- survivors, and the inputs of expired windows and backfills belong to live profiles (a merge
-- moves them, an erasure deletes them). Asking `profiles` instead read its whole table each
-- batch (20 to 35 ms at 1.1M profiles).
DELETE FROM profile_metric_vectors v USING metric_touched_profiles t
WHERE v.tenant_id = t.tenant_id AND v.workspace_id = t.workspace_id AND v.profile_id = t.profile_id;
INSERT INTO profile_metric_vectors
SELECT p.tenant_id, p.workspace_id, p.profile_id,
  map_from_entries(coalesce(list({'key': m.metric_name, 'value': m.number_value}) FILTER (WHERE m.number_value IS NOT NULL), [])),
  map_from_entries(coalesce(list({'key': m.metric_name, 'value': m.string_value}) FILTER (WHERE m.string_value IS NOT NULL), [])),
  map_from_entries(coalesce(list({'key': m.metric_name, 'value': m.list_value}) FILTER (WHERE m.list_value IS NOT NULL), []))
FROM metric_touched_profiles p
ANTI JOIN metric_merged_away a USING (tenant_id, workspace_id, profile_id)
LEFT JOIN profile_metrics m ON m.tenant_id = p.tenant_id AND m.workspace_id = p.workspace_id AND m.profile_id = p.profile_id
GROUP BY p.tenant_id, p.workspace_id, p.profile_id;

/* @name metrics_touch_workspace */
-- For data written straight into profile_metrics (test and benchmark fixtures): every live profile
-- of a workspace, to rebuild its rows of values.
CREATE TEMP TABLE metric_merged_away (tenant_id VARCHAR, workspace_id VARCHAR, profile_id VARCHAR);
CREATE TEMP TABLE metric_touched_profiles AS
SELECT tenant_id, workspace_id, profile_id FROM profiles
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into IS NULL;

/* @name metrics_drop_work_tables */
DROP TABLE IF EXISTS metric_applying; DROP TABLE IF EXISTS metric_sources; DROP TABLE IF EXISTS metric_compacted;
DROP TABLE IF EXISTS metric_strings_compacted; DROP TABLE IF EXISTS metric_touched; DROP TABLE IF EXISTS metric_touched_profiles;
DROP TABLE IF EXISTS metric_merged_away;

/* @name metrics_mark_backfilled */
UPDATE metric_definitions SET backfilled_at = $now::TIMESTAMP WHERE backfilled_at IS NULL;
