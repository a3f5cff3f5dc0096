/* @name tenant_exists */
SELECT tenant_id FROM tenants WHERE tenant_id = $tenant_id;

/* @name insert_tenant */
INSERT INTO tenants (tenant_id, created_at) VALUES ($tenant_id, $now::TIMESTAMP);

/* @name list_tenants_page */
-- Keyset paging on tenant_id; $after_tenant is NULL on the first page.
SELECT t.tenant_id, t.created_at, count(w.workspace_id) AS workspaces
FROM tenants t LEFT JOIN workspaces w USING (tenant_id)
WHERE $after_tenant IS NULL OR t.tenant_id > $after_tenant
GROUP BY ALL ORDER BY t.tenant_id
LIMIT $limit;

/* @name get_workspace */
SELECT workspace_id, display_name, allowed_origins, consent_categories, consent_default, created_at, updated_at
FROM workspaces WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id;

/* @name insert_workspace */
INSERT INTO workspaces (tenant_id, workspace_id, display_name, allowed_origins, created_at, updated_at,
  consent_categories, consent_default)
VALUES ($tenant_id, $workspace_id, $display_name,
  coalesce(CAST($allowed_origins AS JSON)::VARCHAR[], []::VARCHAR[]), $now::TIMESTAMP, $now::TIMESTAMP,
  coalesce(CAST($consent_categories AS JSON)::VARCHAR[], []::VARCHAR[]), coalesce($consent_default, 'allow'));

/* @name update_workspace */
-- Allowed origins omitted ($allowed_origins NULL) stay as they were: renaming a workspace must not
-- cut off the sites that send it events.
UPDATE workspaces SET display_name = $display_name,
  allowed_origins = coalesce(CAST($allowed_origins AS JSON)::VARCHAR[], allowed_origins),
  consent_categories = coalesce(CAST($consent_categories AS JSON)::VARCHAR[], consent_categories),
  consent_default = coalesce($consent_default, consent_default),
  updated_at = $now::TIMESTAMP
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id;

/* @name list_workspaces_page */
-- Keyset paging on workspace_id; $after_workspace is NULL on the first page.
SELECT workspace_id, display_name, allowed_origins, consent_categories, consent_default, created_at, updated_at
FROM workspaces
WHERE tenant_id = $tenant_id AND ($after_workspace IS NULL OR workspace_id > $after_workspace)
ORDER BY workspace_id
LIMIT $limit;

/* @name insert_token */
INSERT INTO tokens (token_id, tenant_id, kind, workspace_id, name, token_lookup, token_hash, created_at)
VALUES ($token_id, $tenant_id, $kind, $workspace_id, $name, $token_lookup, $token_hash, $now::TIMESTAMP);

/* @name find_tokens_by_lookup */
SELECT token_id, tenant_id, kind, workspace_id, token_hash
FROM tokens WHERE token_lookup = $token_lookup AND revoked_at IS NULL;

/* @name list_tokens_page */
-- Keyset paging on (created_at, token_id); $after_* are NULL on the first page.
SELECT token_id, kind, workspace_id, name, created_at, revoked_at
FROM tokens
WHERE tenant_id = $tenant_id
  AND ($after_token IS NULL OR (created_at, token_id) > ($after_created::TIMESTAMP, $after_token))
ORDER BY created_at, token_id
LIMIT $limit;

/* @name revoke_token */
UPDATE tokens SET revoked_at = $now::TIMESTAMP
WHERE tenant_id = $tenant_id AND token_id = $token_id AND revoked_at IS NULL;

/* @name get_token */
SELECT token_id, kind, workspace_id, name, created_at, revoked_at
FROM tokens WHERE tenant_id = $tenant_id AND token_id = $token_id;

/* @name upsert_identifier_type */
INSERT INTO identifier_types (tenant_id, identifier_type, tier, max_per_profile, created_at, updated_at)
VALUES ($tenant_id, $identifier_type, $tier, $max_per_profile, $now::TIMESTAMP, $now::TIMESTAMP)
ON CONFLICT (tenant_id, identifier_type) DO UPDATE
SET tier = excluded.tier, max_per_profile = excluded.max_per_profile, updated_at = excluded.updated_at;

/* @name get_identifier_type */
SELECT identifier_type AS type, tier, max_per_profile, created_at, updated_at
FROM identifier_types WHERE tenant_id = $tenant_id AND identifier_type = $identifier_type;

/* @name list_identifier_types_page */
-- Keyset paging on the type's name; $after_type is NULL on the first page.
SELECT identifier_type AS type, tier, max_per_profile, created_at, updated_at
FROM identifier_types
WHERE tenant_id = $tenant_id AND ($after_type IS NULL OR identifier_type > $after_type)
ORDER BY identifier_type
LIMIT $limit;

/* @name delete_placeholders */
DELETE FROM placeholders WHERE tenant_id = $tenant_id;

/* @name insert_placeholders */
INSERT INTO placeholders (tenant_id, identifier_type, value)
SELECT DISTINCT $tenant_id, entry.identifier_type, entry.value
FROM (SELECT unnest(CAST($entries AS JSON)::STRUCT(identifier_type VARCHAR, value VARCHAR)[], recursive := true)) AS entry;

/* @name list_placeholders */
SELECT identifier_type, value FROM placeholders WHERE tenant_id = $tenant_id ORDER BY identifier_type, value;
