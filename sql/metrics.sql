/* @name get_metric_definition */
SELECT metric_name FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_scope
  AND metric_name = $metric_name AND event_name = $event_name;

/* @name metric_definitions_named */
SELECT value_kind, aggregation FROM metric_definitions
WHERE tenant_id = $tenant_id AND metric_name = $metric_name;

/* @name insert_metric_definition */
INSERT INTO metric_definitions (tenant_id, workspace_scope, metric_name, event_name, value_kind, value_path,
  aggregation, keep, window_days, display_name, description, created_at)
VALUES ($tenant_id, $workspace_scope, $metric_name, $event_name, $value_kind, $value_path,
  $aggregation, $keep, $window_days, $display_name, $description, $now::TIMESTAMP);

/* @name list_metric_definitions */
SELECT workspace_scope AS workspace_id, metric_name, event_name, value_kind, value_path, display_name,
  description, window_days, aggregation, keep, created_at
FROM metric_definitions
WHERE tenant_id = $tenant_id AND ($workspace_id IS NULL OR workspace_scope IN ('*', $workspace_id))
ORDER BY metric_name, event_name, workspace_scope;

/* @name delete_metric_definition */
DELETE FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope = $workspace_scope
  AND metric_name = $metric_name AND event_name = $event_name;

/* @name metric_kinds_for_workspace */
SELECT metric_name, any_value(value_kind) AS value_kind, any_value(aggregation) AS aggregation
FROM metric_definitions
WHERE tenant_id = $tenant_id AND workspace_scope IN ('*', $workspace_id)
GROUP BY metric_name;
