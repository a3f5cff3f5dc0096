/* @name get_segment */
SELECT segment_id, workspace_id, display_name, predicate, status, on_enter, on_exit, on_backfill, created_at, updated_at,
  evaluation_error, evaluation_failed_at, required_consent
FROM segments WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name insert_segment */
INSERT INTO segments (tenant_id, workspace_id, segment_id, display_name, predicate, status,
  on_enter, on_exit, on_backfill, created_at, updated_at, required_consent)
VALUES ($tenant_id, $workspace_id, $segment_id, $display_name, $predicate, $status,
  $on_enter, $on_exit, $on_backfill, $now::TIMESTAMP, $now::TIMESTAMP, CAST($required_consent AS JSON)::VARCHAR[]);

/* @name update_segment_status */
-- Moving to active from another status asks for a full evaluation, whose entries are backfill.
-- Setting a status also clears an evaluation error: a broken segment set active again is tried
-- afresh, with a full evaluation.
UPDATE segments SET status = $status, updated_at = $now::TIMESTAMP,
  evaluated_at = CASE WHEN $status = 'active' AND (status <> 'active' OR evaluation_error IS NOT NULL) THEN NULL
    ELSE evaluated_at END,
  evaluation_error = NULL, evaluation_failed_at = NULL
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name delete_segment */
DELETE FROM segments WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name delete_segment_members */
DELETE FROM segment_members WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name delete_segment_history */
DELETE FROM segment_history WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name cancel_segment_webhooks */
DELETE FROM webhook_outbox
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id AND status = 'pending';

/* @name list_segments_page */
-- Keyset paging on (workspace_id, segment_id); $after_* are NULL on the first page.
SELECT s.segment_id, s.workspace_id, s.display_name, s.predicate, s.status, s.on_enter, s.on_exit, s.on_backfill,
  s.created_at, s.updated_at, s.evaluation_error, s.evaluation_failed_at, s.required_consent,
  (SELECT count(*) FROM segment_members m
   WHERE m.tenant_id = s.tenant_id AND m.workspace_id = s.workspace_id AND m.segment_id = s.segment_id) AS member_count
FROM segments s
WHERE s.tenant_id = $tenant_id
  AND ($workspace_id IS NULL OR s.workspace_id = $workspace_id)
  AND ($after_workspace IS NULL OR (s.workspace_id, s.segment_id) > ($after_workspace, $after_segment))
ORDER BY s.workspace_id, s.segment_id
LIMIT $limit;

/* @name preview_segment */
-- The double-braced slots are filled by src/segments/compile.ts. Every live profile has a row of
-- values; the profiles scanned are the $scan_limit with the lowest ids. Ids are hashes, so those
-- are a fair sample of the workspace, and the same ones whether a behaviour is read from its
-- metric or, not computed yet, from the stored events (preview_behaviour_values).
WITH workspace_size AS (
  SELECT count(*) AS profiles FROM profile_metric_vectors
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
),
-- Ids are `p_` and 24 hex digits spread evenly, so about 1.25 × $scan_limit of them fall below
-- this bound (always at least $scan_limit, by dozens of standard deviations): the lowest are
-- sorted from those, not from every id of the workspace (20 ms rather than 80 at 1M profiles).
id_bound AS (
  SELECT CASE WHEN profiles <= $scan_limit * 1.25 THEN 'p_~'
    ELSE 'p_' || lpad(lower(to_hex((4294967296 * $scan_limit * 1.25 / profiles)::BIGINT)), 8, '0') END AS below
  FROM workspace_size
),
chosen AS (
  SELECT profile_id
  FROM profile_metric_vectors
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
    AND profile_id < (SELECT below FROM id_bound)
  ORDER BY profile_id
  LIMIT $scan_limit
),
-- The profiles whose events count for those scanned: themselves and those merged into them.
chosen_sources AS (
  SELECT profile_id FROM chosen
  UNION ALL
  SELECT profile_id FROM profiles
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
    AND merged_into IN (SELECT profile_id FROM chosen)
),
{{behaviours}}scanned AS (
  SELECT v.profile_id,
    {{columns}}
  FROM profile_metric_vectors v SEMI JOIN chosen USING (profile_id){{behaviour_joins}}
  WHERE v.tenant_id = $tenant_id AND v.workspace_id = $workspace_id
)
SELECT count(*) FILTER (WHERE {{condition}}) AS matched_profiles, count(*) AS scanned_profiles,
  -- The first $sample_size matching profiles by id (none when 0), for the preview's sample.
  coalesce((list(profile_id ORDER BY profile_id) FILTER (WHERE {{condition}}))[1:$sample_size], [])
    AS sample_ids
FROM scanned;

/* @name preview_behaviour_values */
-- One behaviour's values per scanned profile from the workspace's stored events, as its metric
-- would hold them once backfilled (metrics_sources_from_events, metrics_add_sources): each event
-- under its profile's survivor, in the window by day, through the behaviour's conditions. Only
-- the events of the scanned profiles are read (preview_segment's chosen_sources), so a preview
-- parses the properties of a fiftieth of a 1M-profile workspace's events. The slots are
-- filled by src/segments/compile.ts: the statement's name and parameters, the paths each event
-- is read at in one pass over its properties (`v`, the measured path first), the conditions on
-- them (event_property_matches, as the engine's filter) and the measure (preview_measure_*).
{{b}} AS (
  SELECT coalesce(p.merged_into, e.profile_id) AS profile_id, {{measure}} AS value
  FROM (
    SELECT e.profile_id, e.occured_at, {{values}} AS v
    FROM events e
    WHERE e.tenant_id = $tenant_id AND e.workspace_id = $workspace_id AND e.event_name = ${{b}}_event
      AND (${{b}}_window::INTEGER IS NULL OR e.occured_at::DATE > $today::DATE - ${{b}}_window::INTEGER)
      AND e.profile_id IN (SELECT profile_id FROM chosen_sources)
  ) e
  LEFT JOIN (FROM profiles WHERE merged_into IS NOT NULL) p
    ON p.tenant_id = $tenant_id AND p.workspace_id = $workspace_id AND p.profile_id = e.profile_id
  WHERE {{conditions}}
  GROUP BY 1
)

/* @name preview_measure_count */
count(*)::DOUBLE

/* @name preview_measure_sum */
-- Numbers only, as property_number sums them; a profile whose events have none has no value (0).
sum(event_property_number(v[1]))

/* @name preview_measure_latest */
-- The newest string, ties to the greater value, as latest keeps it.
(max({'seen_at': occured_at, 'value': event_property_text(v[1])}) FILTER (WHERE event_property_text(v[1]) IS NOT NULL)).value

/* @name workspace_profile_totals */
SELECT
  (SELECT count(*) FROM profiles
   WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into IS NULL) AS workspace_profiles,
  (SELECT count(DISTINCT i.profile_id) FROM profile_identifiers i
   JOIN identifier_types t ON t.tenant_id = i.tenant_id AND t.identifier_type = i.identifier_type
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND t.tier = 'strong') AS workspace_identified_profiles;

/* @name segments_live_in_touched */
-- Active segments already evaluated once and not broken, in the workspaces whose profiles a step touched.
SELECT s.tenant_id, s.workspace_id, s.segment_id, s.predicate FROM segments s
WHERE s.status = 'active' AND s.evaluated_at IS NOT NULL AND s.evaluation_error IS NULL
  AND EXISTS (SELECT 1 FROM metric_touched_profiles t WHERE t.tenant_id = s.tenant_id AND t.workspace_id = s.workspace_id)
ORDER BY s.tenant_id, s.workspace_id, s.segment_id;

/* @name segments_awaiting_evaluation */
-- Its first evaluation gives a segment its members at once, so it waits until the metrics of its
-- behaviours hold every stored event.
SELECT tenant_id, workspace_id, segment_id, predicate FROM segments s
WHERE status = 'active' AND evaluated_at IS NULL AND evaluation_error IS NULL
  AND NOT EXISTS (
    SELECT 1 FROM segment_behaviours b JOIN metric_definitions d
      ON d.tenant_id = b.tenant_id AND d.workspace_scope = b.workspace_id AND d.metric_name = b.metric_name
    WHERE b.tenant_id = s.tenant_id AND b.workspace_id = s.workspace_id AND b.segment_id = s.segment_id
      AND d.backfilled_at IS NULL
  )
ORDER BY tenant_id, workspace_id, segment_id;

/* @name segments_stored_metric_shapes */
-- Shapes of the metrics a workspace's values were computed for, whose definitions may have been
-- deleted since (segments on them keep working); a metric of another workspace is not among them.
-- Those computed for segments ('~' names) are not compared by name.
SELECT metric_name, 'number' AS shape FROM metric_contributions
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND NOT starts_with(metric_name, '~') GROUP BY metric_name
UNION ALL
SELECT metric_name, CASE WHEN max(recent_keep) IS NULL THEN 'string' ELSE 'list' END FROM metric_strings
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND NOT starts_with(metric_name, '~') GROUP BY metric_name;

/* @name segments_create_evaluation_tables */
CREATE TEMP TABLE segment_scope (profile_id VARCHAR);
CREATE TEMP TABLE segment_evaluated (
  segment_id VARCHAR, position INTEGER, backfill BOOLEAN, on_enter BOOLEAN, on_exit BOOLEAN, on_backfill BOOLEAN
);

/* @name segments_scope_touched */
INSERT INTO segment_scope
SELECT profile_id FROM metric_touched_profiles WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id;

/* @name segments_choose */
INSERT INTO segment_evaluated
SELECT segment_id, list_position(CAST($segment_ids AS JSON)::VARCHAR[], segment_id) - 1, $backfill,
  on_enter, on_exit, on_backfill
FROM segments
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
  AND list_contains(CAST($segment_ids AS JSON)::VARCHAR[], segment_id);

/* @name segments_match */
-- One row per live profile in scope with a mask of the segments it matches: bit i stands for the
-- i-th evaluated segment (segment_evaluated.position). The double-braced slots are filled by
-- src/segments/compile.ts. Merged-away profiles have no row of values, so they exit. With
-- $whole_workspace the scope is every profile and segment_scope stays empty.
CREATE TEMP TABLE segment_new_masks AS
SELECT profile_id,
    {{mask}} AS mask
FROM (
  SELECT profile_id,
    {{columns}}
  FROM profile_metric_vectors
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
    AND ($whole_workspace OR profile_id IN (SELECT profile_id FROM segment_scope))
);

/* @name segments_current */
CREATE TEMP TABLE segment_current_masks AS
SELECT m.profile_id, bit_or(1::BIGINT << e.position) AS mask
FROM segment_members m JOIN segment_evaluated e USING (segment_id)
WHERE m.tenant_id = $tenant_id AND m.workspace_id = $workspace_id
  AND ($whole_workspace OR m.profile_id IN (SELECT profile_id FROM segment_scope))
GROUP BY m.profile_id;

/* @name segments_changes */
-- Only profiles whose mask changed are expanded, one row per segment whose bit flipped.
CREATE TEMP TABLE segment_changes AS
WITH differing AS (
  SELECT coalesce(n.profile_id, c.profile_id) AS profile_id,
    coalesce(n.mask, 0) AS new_mask, xor(coalesce(n.mask, 0), coalesce(c.mask, 0)) AS flipped
  FROM segment_new_masks n FULL OUTER JOIN segment_current_masks c ON c.profile_id = n.profile_id
  WHERE coalesce(n.mask, 0) <> coalesce(c.mask, 0)
)
SELECT e.segment_id, d.profile_id,
  CASE WHEN (d.new_mask >> e.position) & 1 = 1 THEN 'enter' ELSE 'exit' END AS change,
  (d.new_mask >> e.position) & 1 = 1 AND e.backfill AS backfill
FROM differing d JOIN segment_evaluated e ON (d.flipped >> e.position) & 1 = 1;

/* @name segments_apply_exits */
DELETE FROM segment_members m USING segment_changes c
WHERE m.tenant_id = $tenant_id AND m.workspace_id = $workspace_id AND c.change = 'exit'
  AND m.segment_id = c.segment_id AND m.profile_id = c.profile_id;

/* @name segments_apply_enters */
INSERT INTO segment_members
SELECT $tenant_id, $workspace_id, segment_id, profile_id, $now::TIMESTAMP FROM segment_changes WHERE change = 'enter';

/* @name segments_record_history */
INSERT INTO segment_history
SELECT $tenant_id, $workspace_id, segment_id, profile_id, change, backfill, $now::TIMESTAMP FROM segment_changes;

/* @name segments_queue_webhooks */
-- The automations flags decide what is announced (design §14); the body is built by the sender.
INSERT INTO webhook_outbox
SELECT 'msg_' || replace(gen_random_uuid()::VARCHAR, '-', ''), $tenant_id, $workspace_id, c.segment_id, c.profile_id,
  CASE c.change WHEN 'enter' THEN 'segment.entered' ELSE 'segment.exited' END, c.backfill, $now::TIMESTAMP,
  'pending', 0, NULL, NULL, NULL, NULL, NULL, NULL
FROM segment_changes c JOIN segment_evaluated e USING (segment_id)
WHERE CASE WHEN c.change = 'exit' THEN e.on_exit WHEN c.backfill THEN e.on_backfill ELSE e.on_enter END;

/* @name segments_mark_failed */
UPDATE segments SET evaluation_error = $error, evaluation_failed_at = $now::TIMESTAMP
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name segments_mark_evaluated */
UPDATE segments SET evaluated_at = $now::TIMESTAMP
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
  AND list_contains(CAST($segment_ids AS JSON)::VARCHAR[], segment_id);

/* @name segments_drop_evaluation_tables */
DROP TABLE IF EXISTS segment_scope; DROP TABLE IF EXISTS segment_evaluated; 
DROP TABLE IF EXISTS segment_new_masks; DROP TABLE IF EXISTS segment_current_masks; DROP TABLE IF EXISTS segment_changes;

/* @name segment_member_count */
SELECT count(*) AS member_count FROM segment_members
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name segment_members_without_consent */
-- Members whose consent now lacks a category the segment's webhooks need (the newest choice of the
-- profile or of a profile merged into it, else the workspace's default): they count as members,
-- and their deliveries are withheld (webhooks_due_without_consent).
WITH needed AS (
  SELECT unnest(s.required_consent) AS category, w.consent_default
  FROM segments s JOIN workspaces w ON w.tenant_id = s.tenant_id AND w.workspace_id = s.workspace_id
  WHERE s.tenant_id = $tenant_id AND s.workspace_id = $workspace_id AND s.segment_id = $segment_id
),
members AS (
  SELECT profile_id FROM segment_members
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id
),
ledger_owners AS (
  SELECT profile_id AS ledger_profile_id, profile_id FROM members
  UNION ALL
  SELECT profile_id, merged_into FROM profiles
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into IN (SELECT profile_id FROM members)
),
choices AS (
  SELECT o.profile_id, l.category, arg_max(l.granted, (l.chosen_at, l.event_id)) AS granted
  FROM consent_ledger l JOIN ledger_owners o ON o.ledger_profile_id = l.profile_id
  WHERE l.tenant_id = $tenant_id AND l.workspace_id = $workspace_id
    AND l.category IN (SELECT category FROM needed)
  GROUP BY ALL
)
SELECT count(DISTINCT m.profile_id) AS members_without_consent
FROM members m CROSS JOIN needed n
LEFT JOIN choices c ON c.profile_id = m.profile_id AND c.category = n.category
WHERE NOT coalesce(c.granted, n.consent_default = 'allow');

/* @name segment_member_counts */
-- One point per moment the membership changed (each batch writes one changed_at), the newest
-- $limit. Counts are walked back from the current member count, so the newest point is the count
-- the list shows even where a frozen segment's merge moved a membership without a history entry.
WITH changes AS (
  SELECT changed_at, sum(CASE change WHEN 'enter' THEN 1 ELSE -1 END) AS delta
  FROM segment_history
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id
  GROUP BY changed_at
),
members AS (
  SELECT count(*) AS current FROM segment_members
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id
)
SELECT changed_at AS at,
  (SELECT current FROM members) - coalesce(sum(delta) OVER (
    ORDER BY changed_at DESC ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS member_count,
  delta
FROM changes
ORDER BY changed_at DESC
LIMIT $limit;

/* @name segments_in_metric_scope */
-- The segments a metric definition of $workspace_scope reaches ('*': every workspace's).
SELECT workspace_id, segment_id, display_name, status, predicate FROM segments
WHERE tenant_id = $tenant_id AND ($workspace_scope = '*' OR workspace_id = $workspace_scope)
ORDER BY workspace_id, segment_id;

/* @name rule_metric_definitions */
-- The definitions that collect metrics in a workspace (its own and the tenant-wide ones), for the
-- metrics a rule can compare there.
SELECT metric_name, event_name, workspace_scope AS workspace_id, value_kind, value_path, aggregation, window_days,
  display_name
FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope IN ('*', $workspace_id) AND NOT for_segments
ORDER BY metric_name, event_name, workspace_scope;


/* @name event_type_names */
SELECT event_name FROM event_types WHERE tenant_id = $tenant_id;

/* @name insert_behaviour_definition */
-- A behaviour already computed in the workspace (for another segment) is shared.
INSERT OR IGNORE INTO metric_definitions (tenant_id, workspace_scope, metric_name, event_name, value_kind, value_path,
  aggregation, keep, window_days, display_name, description, created_at, event_filter, for_segments)
VALUES ($tenant_id, $workspace_id, $metric_name, $event_name, $value_kind, $value_path,
  $aggregation, NULL, $window_days, $display_name, NULL, $now::TIMESTAMP, $event_filter, true);

/* @name insert_segment_behaviour */
INSERT OR IGNORE INTO segment_behaviours VALUES ($tenant_id, $workspace_id, $segment_id, $metric_name);

/* @name delete_segment_behaviours */
DELETE FROM segment_behaviours WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name unused_behaviour_metrics */
SELECT metric_name FROM metric_definitions d
WHERE d.tenant_id = $tenant_id AND d.workspace_scope = $workspace_id AND d.for_segments
  AND NOT EXISTS (
    SELECT 1 FROM segment_behaviours b
    WHERE b.tenant_id = d.tenant_id AND b.workspace_id = d.workspace_scope AND b.metric_name = d.metric_name
  );

/* @name release_behaviour_definitions */
-- What a behaviour no segment uses any longer computed goes with its definition (these four).
DELETE FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_id AND for_segments
  AND list_contains(CAST($names AS JSON)::VARCHAR[], metric_name);

/* @name release_behaviour_contributions */
DELETE FROM metric_contributions
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND list_contains(CAST($names AS JSON)::VARCHAR[], metric_name);

/* @name release_behaviour_strings */
DELETE FROM metric_strings
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND list_contains(CAST($names AS JSON)::VARCHAR[], metric_name);

/* @name release_behaviour_values */
-- Only the rows of values holding one of the names are rewritten.
UPDATE profile_metric_vectors SET
  number_values = map_from_entries(list_filter(map_entries(number_values), entry -> NOT list_contains(CAST($names AS JSON)::VARCHAR[], entry.key))),
  string_values = map_from_entries(list_filter(map_entries(string_values), entry -> NOT list_contains(CAST($names AS JSON)::VARCHAR[], entry.key))),
  list_values = map_from_entries(list_filter(map_entries(list_values), entry -> NOT list_contains(CAST($names AS JSON)::VARCHAR[], entry.key))),
  string_entries = map_from_entries(list_filter(map_entries(string_entries), entry -> NOT list_contains(CAST($names AS JSON)::VARCHAR[], entry.key)))
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
  AND (list_has_any(map_keys(number_values), CAST($names AS JSON)::VARCHAR[])
    OR list_has_any(map_keys(string_entries), CAST($names AS JSON)::VARCHAR[]));

/* @name backfilled_behaviour_metrics */
-- The behaviours of a rule whose values are computed and complete, which a preview reads as metrics.
SELECT metric_name FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_id AND for_segments AND backfilled_at IS NOT NULL
  AND list_contains(CAST($names AS JSON)::VARCHAR[], metric_name);

/* @name segments_computing_behaviour */
SELECT s.workspace_id, s.segment_id, s.display_name, s.status FROM segment_behaviours b
JOIN segments s ON s.tenant_id = b.tenant_id AND s.workspace_id = b.workspace_id AND s.segment_id = b.segment_id
WHERE b.tenant_id = $tenant_id AND b.workspace_id = $workspace_id AND b.metric_name = $metric_name
ORDER BY s.segment_id;
