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

/* @name list_event_types_page */
-- Keyset paging on event_name; $after_event is NULL on the first page.
SELECT event_name, dedup_entity, dedup_key_paths, created_at, updated_at
FROM event_types
WHERE tenant_id = $tenant_id AND ($after_event IS NULL OR event_name > $after_event)
ORDER BY event_name
LIMIT $limit;

/* @name delete_event_type */
DELETE FROM event_types WHERE tenant_id = $tenant_id AND event_name = $event_name;

/* @name metric_definitions_using_event */
SELECT metric_name, workspace_scope AS workspace_id FROM metric_definitions
WHERE tenant_id = $tenant_id AND event_name = $event_name ORDER BY metric_name, workspace_scope;

/* @name event_counts_by_name */
-- Stored events (not duplicates, not rejections) by when the collector received them;
-- $workspace_id NULL counts every workspace of the tenant.
SELECT event_name,
  (count(*) FILTER (WHERE received_at >= $now::TIMESTAMP - INTERVAL 1 DAY))::INTEGER AS last_24h,
  count(*)::INTEGER AS last_7d
FROM events
WHERE tenant_id = $tenant_id
  AND ($workspace_id IS NULL OR workspace_id = $workspace_id)
  AND received_at >= $now::TIMESTAMP - INTERVAL 7 DAY
GROUP BY event_name
ORDER BY event_name;
