/* @name get_event_type */
SELECT event_name, dedup_entity, dedup_key_paths, created_at, updated_at
FROM event_types WHERE tenant_id = $tenant_id AND event_name = $event_name;

/* @name insert_event_type */
INSERT INTO event_types (tenant_id, event_name, dedup_entity, dedup_key_paths, created_at, updated_at)
VALUES ($tenant_id, $event_name, $dedup_entity, CAST($dedup_key_paths AS JSON)::VARCHAR[], $now::TIMESTAMP, $now::TIMESTAMP);

/* @name update_event_type */
UPDATE event_types
SET dedup_entity = $dedup_entity, dedup_key_paths = CAST($dedup_key_paths AS JSON)::VARCHAR[], updated_at = $now::TIMESTAMP
WHERE tenant_id = $tenant_id AND event_name = $event_name;

/* @name list_event_types */
SELECT event_name, dedup_entity, dedup_key_paths, created_at, updated_at
FROM event_types WHERE tenant_id = $tenant_id ORDER BY event_name;

/* @name delete_event_type */
DELETE FROM event_types WHERE tenant_id = $tenant_id AND event_name = $event_name;

/* @name metric_names_using_event */
SELECT DISTINCT metric_name FROM metric_definitions
WHERE tenant_id = $tenant_id AND event_name = $event_name ORDER BY metric_name;
