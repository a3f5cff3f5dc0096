/* @name registry_workspaces */
SELECT t.tenant_id, list(w.workspace_id ORDER BY w.workspace_id) FILTER (WHERE w.workspace_id IS NOT NULL) AS workspaces
FROM tenants t LEFT JOIN workspaces w USING (tenant_id)
GROUP BY t.tenant_id;

/* @name registry_event_types */
SELECT tenant_id, list(event_name ORDER BY event_name) AS event_types FROM event_types GROUP BY tenant_id;

/* @name registry_collector_tokens */
SELECT tenant_id, token_id, workspace_id, token_lookup, token_hash
FROM tokens WHERE kind = 'collector' AND revoked_at IS NULL;
