-- Control plane: tenants, workspaces, tokens, identifier rules, event types, metric and segment definitions.

CREATE TABLE tenants (
  tenant_id VARCHAR PRIMARY KEY,
  created_at TIMESTAMP NOT NULL
);

CREATE TABLE workspaces (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  display_name VARCHAR,
  created_at TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, workspace_id)
);

-- Only a hash of each secret is kept. token_lookup (a prefix of the hash) finds the row; the full
-- hash is then compared in constant time.
CREATE TABLE tokens (
  token_id VARCHAR PRIMARY KEY,
  tenant_id VARCHAR NOT NULL,
  kind VARCHAR NOT NULL CHECK (kind IN ('tenant', 'workspace', 'collector')),
  workspace_id VARCHAR,
  name VARCHAR,
  token_lookup VARCHAR NOT NULL,
  token_hash VARCHAR NOT NULL,
  created_at TIMESTAMP NOT NULL,
  revoked_at TIMESTAMP
);
CREATE INDEX tokens_by_lookup ON tokens (token_lookup);

CREATE TABLE identifier_types (
  tenant_id VARCHAR NOT NULL,
  identifier_type VARCHAR NOT NULL,
  tier VARCHAR NOT NULL CHECK (tier IN ('strong', 'weak')),
  max_per_profile INTEGER,
  created_at TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, identifier_type)
);

-- identifier_type '*' applies to every type.
CREATE TABLE placeholders (
  tenant_id VARCHAR NOT NULL,
  identifier_type VARCHAR NOT NULL,
  value VARCHAR NOT NULL,
  PRIMARY KEY (tenant_id, identifier_type, value)
);

CREATE TABLE event_types (
  tenant_id VARCHAR NOT NULL,
  event_name VARCHAR NOT NULL,
  dedup_entity VARCHAR,
  dedup_key_paths VARCHAR[],
  created_at TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, event_name)
);

-- workspace_scope '*' means every workspace of the tenant.
CREATE TABLE metric_definitions (
  tenant_id VARCHAR NOT NULL,
  workspace_scope VARCHAR NOT NULL,
  metric_name VARCHAR NOT NULL,
  event_name VARCHAR NOT NULL,
  value_kind VARCHAR NOT NULL,
  value_path VARCHAR,
  aggregation VARCHAR,
  keep INTEGER,
  window_days INTEGER,
  display_name VARCHAR,
  description VARCHAR,
  created_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, workspace_scope, metric_name, event_name)
);

CREATE TABLE segments (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  segment_id VARCHAR NOT NULL,
  display_name VARCHAR NOT NULL,
  predicate JSON NOT NULL,
  status VARCHAR NOT NULL CHECK (status IN ('draft', 'active', 'paused', 'archived')),
  on_enter BOOLEAN NOT NULL,
  on_exit BOOLEAN NOT NULL,
  on_backfill BOOLEAN NOT NULL,
  created_at TIMESTAMP NOT NULL,
  updated_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, workspace_id, segment_id)
);
