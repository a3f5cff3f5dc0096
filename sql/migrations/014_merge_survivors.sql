-- A merge recorded in an earlier batch kept as survivor a profile that a later batch merged away,
-- so the survivor's history missed it, while the same merges in one batch named the last
-- survivor. Every recorded merge now names its cluster's survivor, as profiles.merged_into does
-- (it never chains).
UPDATE profile_merges r SET survivor_profile_id = p.merged_into
FROM profiles p
WHERE p.tenant_id = r.tenant_id AND p.workspace_id = r.workspace_id AND p.profile_id = r.survivor_profile_id
  AND p.merged_into IS NOT NULL;
