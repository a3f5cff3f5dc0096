-- Profiles and what is derived for them. Filled by ingest; read by preview, member counts and the profile API.

CREATE TABLE profiles (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  created_at TIMESTAMP NOT NULL,
  last_seen_at TIMESTAMP NOT NULL,
  merged_into VARCHAR,
  PRIMARY KEY (tenant_id, workspace_id, profile_id)
);

-- identifier_key is HMAC(tenant key, type:normalised value); the value itself is only kept encrypted.
CREATE TABLE profile_identifiers (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  identifier_key VARCHAR NOT NULL,
  identifier_type VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  ciphertext BLOB NOT NULL,
  masked_value VARCHAR NOT NULL,
  first_seen_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, workspace_id, identifier_key)
);
CREATE INDEX profile_identifiers_by_profile ON profile_identifiers (tenant_id, workspace_id, profile_id);

-- One row per profile and metric; which of the value columns is used follows the metric's kind.
CREATE TABLE profile_metrics (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  metric_name VARCHAR NOT NULL,
  number_value DOUBLE,
  string_value VARCHAR,
  list_value VARCHAR[],
  updated_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, workspace_id, profile_id, metric_name)
);

CREATE TABLE segment_members (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  segment_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  entered_at TIMESTAMP NOT NULL,
  PRIMARY KEY (tenant_id, workspace_id, segment_id, profile_id)
);
