-- A dedup key of key paths was their values joined with '|', so ("c1|7", "1") and ("c1", "7|1")
-- made one key and the second event was dropped as a duplicate. Keys are now the values as a JSON
-- array (ingest_stage), which no value can imitate. Stored keys are computed again the way ingest
-- now computes them, from the stored properties and the type's key paths, so that an event sent
-- again after the upgrade is still known as a duplicate. Events stored by id keep their key.
UPDATE events e
SET dedup_key = t.dedup_entity || ':' || to_json(list_transform(t.dedup_key_paths,
      path -> coalesce(json_extract_string(e.properties, '$.' || path[12:]), '')))::VARCHAR
FROM event_types t
WHERE t.tenant_id = e.tenant_id AND t.event_name = e.event_name
  AND t.dedup_key_paths IS NOT NULL AND e.dedup_key <> 'id:' || e.event_id;
UPDATE events SET dedup_hash = md5_number(tenant_id || '/' || workspace_id || '/' || event_name || '/' || dedup_key)
WHERE dedup_key <> 'id:' || event_id;
