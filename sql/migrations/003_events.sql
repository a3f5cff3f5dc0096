-- Ingested events and the ingest loop's own records (design §9).

-- Stored events keep identifier keys, never identifier values; dedup_key is the event type's
-- dedup value (entity and key-path values) or the event id.
CREATE TABLE events (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  event_id VARCHAR NOT NULL,
  event_name VARCHAR NOT NULL,
  dedup_key VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  source VARCHAR NOT NULL,
  occured_at TIMESTAMP NOT NULL,
  received_at TIMESTAMP NOT NULL,
  properties JSON,
  identifier_keys VARCHAR[] NOT NULL,
  ingested_at TIMESTAMP NOT NULL
);

CREATE TABLE ingested_files (
  path VARCHAR PRIMARY KEY,
  size BIGINT NOT NULL,
  sha256 VARCHAR NOT NULL,
  lines INTEGER NOT NULL,
  ingested_at TIMESTAMP NOT NULL
);

-- No payload is kept: a rejected line may hold identifier values.
CREATE TABLE rejected_events (
  tenant_id VARCHAR,
  workspace_id VARCHAR,
  event_id VARCHAR,
  event_name VARCHAR,
  reason VARCHAR NOT NULL,
  file VARCHAR NOT NULL,
  received_at TIMESTAMP,
  rejected_at TIMESTAMP NOT NULL
);

CREATE TABLE ingest_stats (
  id INTEGER PRIMARY KEY,
  batches BIGINT NOT NULL,
  files BIGINT NOT NULL,
  events_ingested BIGINT NOT NULL,
  duplicates BIGINT NOT NULL,
  rejected BIGINT NOT NULL,
  unparsable_lines BIGINT NOT NULL,
  -- Identifier values that were placeholders or could not be normalised (an invalid phone).
  dropped_identifiers BIGINT NOT NULL,
  last_batch_at TIMESTAMP,
  last_received_at TIMESTAMP
);
INSERT INTO ingest_stats VALUES (1, 0, 0, 0, 0, 0, 0, 0, NULL, NULL);

CREATE TABLE profile_merges (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  merged_profile_id VARCHAR NOT NULL,
  survivor_profile_id VARCHAR NOT NULL,
  event_id VARCHAR NOT NULL,
  merged_at TIMESTAMP NOT NULL
);

-- A merge refused because a type would exceed its max_per_profile, or an identifier not attached.
CREATE TABLE identity_conflicts (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  other_profile_id VARCHAR,
  identifier_type VARCHAR NOT NULL,
  reason VARCHAR NOT NULL,
  event_id VARCHAR NOT NULL,
  recorded_at TIMESTAMP NOT NULL
);
