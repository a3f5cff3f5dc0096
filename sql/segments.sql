/* @name get_segment */
SELECT segment_id, workspace_id, display_name, predicate, status, on_enter, on_exit, on_backfill, created_at, updated_at
FROM segments WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name insert_segment */
INSERT INTO segments (tenant_id, workspace_id, segment_id, display_name, predicate, status,
  on_enter, on_exit, on_backfill, created_at, updated_at)
VALUES ($tenant_id, $workspace_id, $segment_id, $display_name, $predicate, $status,
  $on_enter, $on_exit, $on_backfill, $now::TIMESTAMP, $now::TIMESTAMP);

/* @name update_segment_status */
UPDATE segments SET status = $status, updated_at = $now::TIMESTAMP
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name delete_segment */
DELETE FROM segments WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name delete_segment_members */
DELETE FROM segment_members WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND segment_id = $segment_id;

/* @name list_segments_page */
-- Keyset paging on (workspace_id, segment_id); $after_* are NULL on the first page.
SELECT s.segment_id, s.workspace_id, s.display_name, s.predicate, s.status, s.on_enter, s.on_exit, s.on_backfill,
  s.created_at, s.updated_at,
  (SELECT count(*) FROM segment_members m
   WHERE m.tenant_id = s.tenant_id AND m.workspace_id = s.workspace_id AND m.segment_id = s.segment_id) AS member_count
FROM segments s
WHERE s.tenant_id = $tenant_id
  AND ($workspace_id IS NULL OR s.workspace_id = $workspace_id)
  AND ($after_workspace IS NULL OR (s.workspace_id, s.segment_id) > ($after_workspace, $after_segment))
ORDER BY s.workspace_id, s.segment_id
LIMIT $limit;

/* @name preview_segment */
-- The double-braced slots are filled by src/segments/compile.ts.
WITH scanned AS (
  SELECT profile_id FROM profiles
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into IS NULL
  LIMIT $scan_limit
), metric_values AS (
  SELECT profile_id,
    {{columns}}
  FROM profile_metrics
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND metric_name IN ({{metric_names}})
    AND profile_id IN (SELECT profile_id FROM scanned)
  GROUP BY profile_id
)
SELECT count(*) FILTER (WHERE {{condition}}) AS matched_profiles, count(*) AS scanned_profiles
FROM scanned LEFT JOIN metric_values USING (profile_id);

/* @name workspace_profile_totals */
SELECT
  (SELECT count(*) FROM profiles
   WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into IS NULL) AS workspace_profiles,
  (SELECT count(DISTINCT i.profile_id) FROM profile_identifiers i
   JOIN identifier_types t ON t.tenant_id = i.tenant_id AND t.identifier_type = i.identifier_type
   WHERE i.tenant_id = $tenant_id AND i.workspace_id = $workspace_id AND t.tier = 'strong') AS workspace_identified_profiles;
