-- Issue 37 (lookups proportional to the batch): a merge no longer moves the merges recorded
-- before it. Each batch re-pointed every recorded merge naming the profile it merged away, a pass
-- over all recorded merges (about 30 ms a batch at 10M events). A record now keeps the survivor of
-- its own time, and profile_merges reads it through that profile's merged_into, which never chains
-- (as the analysts' events view reads an event's profile), so every reader still sees each merge
-- under its cluster's last survivor.
ALTER TABLE profile_merges RENAME TO profile_merge_records;
CREATE VIEW profile_merges AS
SELECT r.tenant_id, r.workspace_id, r.merged_profile_id,
  coalesce(p.merged_into, r.survivor_profile_id) AS survivor_profile_id, r.event_id, r.merged_at
FROM profile_merge_records r
LEFT JOIN profiles p
  ON p.tenant_id = r.tenant_id AND p.workspace_id = r.workspace_id AND p.profile_id = r.survivor_profile_id;
