-- Issue 39 (analytics.js unchanged): browser write keys are tokens of a fourth kind, `write_key`
-- (docs/decisions.md "Browser write keys"). A CHECK constraint cannot be altered in DuckDB, so
-- the table is made again with the wider one; no view or key refers to it.
CREATE TABLE tokens_with_write_keys (
  token_id VARCHAR PRIMARY KEY,
  tenant_id VARCHAR NOT NULL,
  kind VARCHAR NOT NULL CHECK (kind IN ('tenant', 'workspace', 'collector', 'write_key')),
  workspace_id VARCHAR,
  name VARCHAR,
  token_lookup VARCHAR NOT NULL,
  token_hash VARCHAR NOT NULL,
  created_at TIMESTAMP NOT NULL,
  revoked_at TIMESTAMP
);
INSERT INTO tokens_with_write_keys SELECT * FROM tokens;
DROP TABLE tokens;
ALTER TABLE tokens_with_write_keys RENAME TO tokens;
CREATE INDEX tokens_by_lookup ON tokens (token_lookup);
