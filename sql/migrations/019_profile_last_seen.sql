-- Issue 37 (append-only hot tables): ingest appends each touched profile's newest event time here
-- instead of updating profiles.last_seen_at in place, which read the whole profiles table every
-- batch and made its checkpoint rewrite the row groups it touched. A profile's last seen is the
-- greatest of its profiles row and its rows here; the ingest loop's upkeep folds them into
-- profiles once they are many (src/identity/last-seen.ts).
CREATE TABLE profile_last_seen (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  last_seen_at TIMESTAMP NOT NULL
);
