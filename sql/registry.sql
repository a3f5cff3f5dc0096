/* @name registry_snapshot */
-- One statement, so the whole registry is one consistent state of the database.
SELECT to_json(coalesce(list({
  'tenant_id': t.tenant_id,
  'workspaces': coalesce((
    SELECT list(w.workspace_id ORDER BY w.workspace_id)
    FROM workspaces w WHERE w.tenant_id = t.tenant_id), []::VARCHAR[]),
  'allowed_origins': coalesce((
    SELECT list({'workspace_id': w.workspace_id, 'origins': w.allowed_origins} ORDER BY w.workspace_id)
    FROM workspaces w WHERE w.tenant_id = t.tenant_id AND len(w.allowed_origins) > 0), []),
  'consent_categories': coalesce((
    SELECT list({'workspace_id': w.workspace_id, 'categories': w.consent_categories} ORDER BY w.workspace_id)
    FROM workspaces w WHERE w.tenant_id = t.tenant_id AND len(w.consent_categories) > 0), []),
  'event_types': coalesce((
    SELECT list(e.event_name ORDER BY e.event_name)
    FROM event_types e WHERE e.tenant_id = t.tenant_id), []::VARCHAR[]),
  'collector_tokens': coalesce((
    SELECT list({
      'token_id': k.token_id,
      'workspace_id': k.workspace_id,
      'token_lookup': k.token_lookup,
      'token_hash': k.token_hash
    } ORDER BY k.token_id)
    FROM tokens k
    WHERE k.tenant_id = t.tenant_id AND k.kind = 'collector' AND k.revoked_at IS NULL), []),
  'write_keys': coalesce((
    SELECT list({
      'token_id': k.token_id,
      'workspace_id': k.workspace_id,
      'token_lookup': k.token_lookup,
      'token_hash': k.token_hash
    } ORDER BY k.token_id)
    FROM tokens k
    WHERE k.tenant_id = t.tenant_id AND k.kind = 'write_key' AND k.revoked_at IS NULL), [])
} ORDER BY t.tenant_id), []))
FROM tenants t;

/* @name registry_next_epoch */
-- $floor is the epoch of the registry.json on disk, in case the database is older than the file
-- (restored from a backup): versions keep growing past what collectors have seen.
UPDATE registry_epoch SET epoch = greatest(epoch, $floor) + 1 RETURNING epoch;
