-- Erasure (design §15): tombstones for lines still in flight, and an audit log without identifiers.

-- identifier_key is the HMAC the identifier was stored under, never its value: a landing line
-- received before erased_at that carries it is dropped at ingest.
CREATE TABLE identifier_tombstones (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  identifier_key VARCHAR NOT NULL,
  erased_at TIMESTAMP NOT NULL
);

CREATE TABLE erasure_audit (
  erasure_id VARCHAR PRIMARY KEY,
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  -- The token id of the caller, or `operator`.
  actor VARCHAR NOT NULL,
  erased_at TIMESTAMP NOT NULL,
  profiles INTEGER NOT NULL,
  identifiers INTEGER NOT NULL,
  metrics INTEGER NOT NULL,
  segment_memberships INTEGER NOT NULL,
  history_entries INTEGER NOT NULL,
  events INTEGER NOT NULL
);
