/* @name profile_by_identifier_key */
SELECT profile_id FROM profile_identifiers
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND identifier_key = $identifier_key;

/* @name get_profile */
-- Last seen: the greatest of the row's and those ingest appended since the last compaction.
SELECT p.profile_id, p.created_at,
  greatest(p.last_seen_at, (
    SELECT max(l.last_seen_at) FROM profile_last_seen l
    WHERE l.tenant_id = $tenant_id AND l.workspace_id = $workspace_id AND l.profile_id = $profile_id
  )) AS last_seen_at,
  p.merged_into
FROM profiles p
WHERE p.tenant_id = $tenant_id AND p.workspace_id = $workspace_id AND p.profile_id = $profile_id;

/* @name identifiers_of_profile */
SELECT i.identifier_type AS type, coalesce(t.tier, 'weak') AS tier, i.ciphertext, i.masked_value, i.identifier_key AS key
FROM profile_identifiers i
LEFT JOIN identifier_types t ON t.tenant_id = i.tenant_id AND t.identifier_type = i.identifier_type
WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = $profile_id
ORDER BY i.first_seen_at, i.identifier_type, i.identifier_key;

/* @name metrics_of_profile */
-- The catalog's metrics: the values computed for segments' behaviours ('~' names) are theirs.
SELECT metric_name, number_value, string_value, list_value FROM profile_metrics
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id = $profile_id
  AND NOT starts_with(metric_name, '~')
ORDER BY metric_name;

/* @name consent_of_profile */
-- Each category's newest choice (ties to the later event id) among the profile's own and those
-- of the profiles merged into it, as the ledger keeps them under the profile of their time.
SELECT category, arg_max(granted, (chosen_at, event_id)) AS granted, max(chosen_at) AS chosen_at,
  arg_max(event_id, (chosen_at, event_id)) AS event_id, arg_max(source, (chosen_at, event_id)) AS source
FROM consent_ledger
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
  AND (profile_id = $profile_id OR profile_id IN (
    SELECT profile_id FROM profiles
    WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into = $profile_id))
GROUP BY category
ORDER BY category;

/* @name segments_of_profile */
SELECT segment_id, entered_at FROM segment_members
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id = $profile_id
ORDER BY segment_id;

/* @name profiles_merged_into */
SELECT profile_id FROM profiles
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into = $profile_id
ORDER BY profile_id;

/* @name profile_history_page */
-- Newest first; keyset on (happened_at, kind, ref), ref being unique within a kind.
SELECT happened_at, kind, ref, event_name, properties FROM (
  SELECT occured_at AS happened_at, 'event' AS kind, event_id AS ref, event_name, properties::VARCHAR AS properties
  FROM events WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
    AND (profile_id = $profile_id OR profile_id IN (
      SELECT profile_id FROM profiles
      WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into = $profile_id))
  UNION ALL
  -- A record names the survivor of its time, which may since have merged into this profile
  -- (profile_merges reads the same, for a whole table).
  SELECT merged_at, 'merge', merged_profile_id, NULL, NULL
  FROM profile_merge_records WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
    AND (survivor_profile_id = $profile_id OR survivor_profile_id IN (
      SELECT profile_id FROM profiles
      WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into = $profile_id))
  UNION ALL
  SELECT changed_at, 'segment_' || change, segment_id, NULL, NULL
  FROM segment_history WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id = $profile_id
)
WHERE $before_at IS NULL OR (happened_at, kind, ref) < ($before_at::TIMESTAMP, $before_kind, $before_ref)
ORDER BY happened_at DESC, kind DESC, ref DESC
LIMIT $limit;

/* @name profile_summary_by_id */
-- The customer table's page in profile id order (the page slot of profile_summary_rows).
SELECT p.profile_id, p.last_seen_at, NULL::DOUBLE AS sort_value FROM profiles p
WHERE p.tenant_id = $tenant_id AND p.workspace_id = $workspace_id AND p.merged_into IS NULL
  AND ($after IS NULL OR p.profile_id > $after)
  AND ($segment_id IS NULL OR EXISTS (
    SELECT 1 FROM segment_members s
    WHERE s.tenant_id = p.tenant_id AND s.workspace_id = p.workspace_id AND s.profile_id = p.profile_id
      AND s.segment_id = $segment_id))
ORDER BY p.profile_id
LIMIT $limit

/* @name profile_summary_by_metric */
-- The customer table's page by a number metric, profiles without it last, ties by profile id:
-- the keyset is (missing, value, profile id), the value negated when descending. Every live
-- profile has a row of values.
SELECT v.profile_id, p.last_seen_at, v.number_values[$sort_metric] AS sort_value
FROM profile_metric_vectors v
JOIN profiles p ON p.tenant_id = v.tenant_id AND p.workspace_id = v.workspace_id AND p.profile_id = v.profile_id
WHERE v.tenant_id = $tenant_id AND v.workspace_id = $workspace_id
  AND ($segment_id IS NULL OR EXISTS (
    SELECT 1 FROM segment_members s
    WHERE s.tenant_id = v.tenant_id AND s.workspace_id = v.workspace_id AND s.profile_id = v.profile_id
      AND s.segment_id = $segment_id))
  AND ($after IS NULL
    OR ($after_missing AND v.number_values[$sort_metric] IS NULL AND v.profile_id > $after)
    OR (NOT $after_missing AND (v.number_values[$sort_metric] IS NULL
      OR (CASE WHEN $descending THEN -1 ELSE 1 END) * v.number_values[$sort_metric] > (CASE WHEN $descending THEN -1 ELSE 1 END) * $after_value::DOUBLE
      OR (v.number_values[$sort_metric] = $after_value::DOUBLE AND v.profile_id > $after))))
ORDER BY sort_value IS NULL, (CASE WHEN $descending THEN -1 ELSE 1 END) * sort_value, v.profile_id
LIMIT $limit

/* @name profile_summary_rows */
-- One row per profile of the page (the slot: profile_summary_by_id or _by_metric), in its order.
WITH page AS ({{page}})
SELECT page.profile_id,
  greatest(page.last_seen_at, (SELECT max(l.last_seen_at) FROM profile_last_seen l
   WHERE l.tenant_id = $tenant_id AND l.workspace_id = $workspace_id AND l.profile_id = page.profile_id)) AS last_seen_at,
  (SELECT arg_min(i.ciphertext, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = page.profile_id AND i.identifier_type = 'email') AS email_ciphertext,
  (SELECT arg_min(i.masked_value, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = page.profile_id AND i.identifier_type = 'email') AS email_masked,
  (SELECT arg_min(i.ciphertext, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = page.profile_id AND i.identifier_type = 'phone') AS phone_ciphertext,
  (SELECT arg_min(i.masked_value, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = page.profile_id AND i.identifier_type = 'phone') AS phone_masked,
  (SELECT list({'metric_name': m.metric_name, 'number_value': m.number_value, 'string_value': m.string_value, 'list_value': m.list_value} ORDER BY m.metric_name)
   FROM profile_metrics m
   WHERE m.tenant_id = $tenant_id AND m.workspace_id = $workspace_id AND m.profile_id = page.profile_id
     AND NOT starts_with(m.metric_name, '~')) AS metrics,
  (SELECT list(s.segment_id ORDER BY s.segment_id) FROM segment_members s
   WHERE s.tenant_id = $tenant_id AND s.workspace_id = $workspace_id AND s.profile_id = page.profile_id) AS segment_ids,
  page.sort_value
FROM page
ORDER BY page.sort_value IS NULL, (CASE WHEN $descending THEN -1 ELSE 1 END) * page.sort_value, page.profile_id;

/* @name profile_contacts */
-- The first email and phone of each profile of $profile_ids, as the customer table shows them.
SELECT p.profile_id,
  (SELECT arg_min(i.ciphertext, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = p.profile_id AND i.identifier_type = 'email') AS email_ciphertext,
  (SELECT arg_min(i.masked_value, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = p.profile_id AND i.identifier_type = 'email') AS email_masked,
  (SELECT arg_min(i.ciphertext, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = p.profile_id AND i.identifier_type = 'phone') AS phone_ciphertext,
  (SELECT arg_min(i.masked_value, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND i.profile_id = p.profile_id AND i.identifier_type = 'phone') AS phone_masked
FROM (SELECT unnest(CAST($profile_ids AS JSON)::VARCHAR[]) AS profile_id) p;

/* @name last_seen_pending */
-- Cheap (table statistics).
SELECT (SELECT count(*) FROM profile_last_seen) AS pending, (SELECT count(*) FROM profiles) AS profiles;

/* @name last_seen_compact */
-- Folds what ingest appended into profiles.last_seen_at, in one pass, and starts the appends anew.
UPDATE profiles p SET last_seen_at = greatest(p.last_seen_at, l.last_seen_at)
FROM (
  SELECT tenant_id, workspace_id, profile_id, max(last_seen_at) AS last_seen_at
  FROM profile_last_seen GROUP BY ALL
) l
WHERE p.tenant_id = l.tenant_id AND p.workspace_id = l.workspace_id AND p.profile_id = l.profile_id;
DELETE FROM profile_last_seen;
