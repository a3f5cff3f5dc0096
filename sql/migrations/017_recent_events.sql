-- The live view (issue 31): what became of each line of the last day, per workspace, newest
-- first. Written by the batch that decided it, pruned by upkeep (the last 24 h, at most a bounded
-- number of rows per workspace), so it stays small beside events. No identifier value is held:
-- properties.identifiers carries masked values only. seq orders the rows across batches (a batch
-- takes the next numbers after the largest held), and is what a client's cursor resumes from.
CREATE TABLE recent_events (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  seq BIGINT NOT NULL,
  event_id VARCHAR,
  event_name VARCHAR,
  occured_at TIMESTAMP,
  received_at TIMESTAMP,
  source VARCHAR,
  outcome VARCHAR NOT NULL,
  reason VARCHAR,
  profile_id VARCHAR,
  properties JSON,
  recorded_at TIMESTAMP NOT NULL
);
