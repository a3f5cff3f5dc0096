/* @name quota_count_workspaces */
SELECT count(*) AS held FROM workspaces WHERE tenant_id = $tenant_id;

/* @name quota_count_segments */
SELECT count(*) AS held FROM segments WHERE tenant_id = $tenant_id;

/* @name quota_count_metric_definitions */
-- Definitions computed for segments are bounded by the segments quota (10 behaviours a rule).
SELECT count(*) AS held FROM metric_definitions WHERE tenant_id = $tenant_id AND NOT for_segments;

/* @name quota_count_event_types */
SELECT count(*) AS held FROM event_types WHERE tenant_id = $tenant_id;

/* @name quota_count_identifier_types */
SELECT count(*) AS held FROM identifier_types WHERE tenant_id = $tenant_id;

/* @name quota_count_tokens */
SELECT count(*) AS held FROM tokens WHERE tenant_id = $tenant_id AND revoked_at IS NULL;
