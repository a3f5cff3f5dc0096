-- Ingest deduplicates against one 16-byte column instead of four strings per stored event: the
-- anti-join of every batch reads all of it, so its width sets how ingest slows as events pile up.
-- The hash covers tenant, workspace, event name and dedup key; none of the first three can hold '/'.
ALTER TABLE events ADD COLUMN dedup_hash UHUGEINT;
UPDATE events SET dedup_hash = md5_number(tenant_id || '/' || workspace_id || '/' || event_name || '/' || dedup_key);
