-- Merged-away profiles kept their memberships of segments that are not evaluated (paused, draft,
-- archived), so member_count counted them while the member list, which shows live profiles, did
-- not. Ingest now passes such memberships to the survivor at the merge
-- (ingest_apply_merges_to_frozen_segments); this does the same once for merges made before.
CREATE TEMP TABLE frozen_moves AS
SELECT m.tenant_id, m.workspace_id, m.segment_id, p.merged_into AS profile_id, m.entered_at,
  m.profile_id AS merged_profile_id
FROM segment_members m
JOIN profiles p ON p.tenant_id = m.tenant_id AND p.workspace_id = m.workspace_id AND p.profile_id = m.profile_id
JOIN segments s ON s.tenant_id = m.tenant_id AND s.workspace_id = m.workspace_id AND s.segment_id = m.segment_id
WHERE p.merged_into IS NOT NULL AND s.status <> 'active';
CREATE TEMP TABLE frozen_members AS
SELECT tenant_id, workspace_id, segment_id, profile_id, min(entered_at) AS entered_at FROM (
  SELECT tenant_id, workspace_id, segment_id, profile_id, entered_at FROM frozen_moves
  UNION ALL
  SELECT m.tenant_id, m.workspace_id, m.segment_id, m.profile_id, m.entered_at
  FROM segment_members m SEMI JOIN frozen_moves f USING (tenant_id, workspace_id, segment_id, profile_id)
) GROUP BY ALL;
DELETE FROM segment_members m USING frozen_moves f
WHERE m.tenant_id = f.tenant_id AND m.workspace_id = f.workspace_id AND m.segment_id = f.segment_id
  AND m.profile_id IN (f.merged_profile_id, f.profile_id);
INSERT INTO segment_members SELECT tenant_id, workspace_id, segment_id, profile_id, entered_at FROM frozen_members;
DROP TABLE frozen_members;
DROP TABLE frozen_moves;
