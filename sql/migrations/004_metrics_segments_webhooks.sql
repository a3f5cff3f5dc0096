-- Metric inputs, segment history and the webhook outbox (design §12–§14).

-- Definitions created after events were stored first backfill from them; until then ingest
-- leaves them out, so no event is counted twice.
ALTER TABLE metric_definitions ADD COLUMN backfilled_at TIMESTAMP;

-- An active segment whose membership has not been computed since it was created or activated;
-- the next evaluation covers every profile of the workspace and marks its entries as backfill.
ALTER TABLE segments ADD COLUMN evaluated_at TIMESTAMP;

-- What each definition adds to a profile's count or sum. contributor is `event_name|workspace_scope`
-- of a live definition, or `frozen|…` for the value a deleted one left behind. Windowed definitions
-- keep one row per day (day, window_days); the others one row without a day.
CREATE TABLE metric_contributions (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  metric_name VARCHAR NOT NULL,
  contributor VARCHAR NOT NULL,
  day DATE,
  window_days INTEGER,
  amount DOUBLE NOT NULL
);

-- The newest distinct strings each definition saw for a profile, with the newest occured_at of
-- each: one for `latest` (recent_keep NULL), up to `keep` for `recent`.
CREATE TABLE metric_strings (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  metric_name VARCHAR NOT NULL,
  contributor VARCHAR NOT NULL,
  recent_keep INTEGER,
  value VARCHAR NOT NULL,
  seen_at TIMESTAMP NOT NULL
);

-- The last day whose expired window buckets were taken out of the values.
CREATE TABLE metric_decay (
  id INTEGER PRIMARY KEY,
  decayed_through DATE
);
INSERT INTO metric_decay VALUES (1, NULL);

CREATE TABLE segment_history (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  segment_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  change VARCHAR NOT NULL CHECK (change IN ('enter', 'exit')),
  backfill BOOLEAN NOT NULL,
  changed_at TIMESTAMP NOT NULL
);

-- Written in the membership change's transaction; the sender delivers and updates the row.
-- created_at is when the change happened; the attempt times are the sender's wall clock.
CREATE TABLE webhook_outbox (
  webhook_id VARCHAR PRIMARY KEY,
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  segment_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  type VARCHAR NOT NULL CHECK (type IN ('segment.entered', 'segment.exited')),
  backfill BOOLEAN NOT NULL,
  created_at TIMESTAMP NOT NULL,
  status VARCHAR NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
  attempts INTEGER NOT NULL,
  next_attempt_at TIMESTAMP,
  first_attempt_at TIMESTAMP,
  last_attempt_at TIMESTAMP,
  last_error VARCHAR,
  delivered_at TIMESTAMP
);

-- Memberships are written as the difference an evaluation computed, never blindly, so they need no
-- key index; keeping one made writing a million memberships take seconds.
ALTER TABLE segment_members RENAME TO segment_members_keyed;
CREATE TABLE segment_members (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  segment_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  entered_at TIMESTAMP NOT NULL
);
INSERT INTO segment_members SELECT * FROM segment_members_keyed;
DROP TABLE segment_members_keyed;

-- One row per live profile with its metric values as maps: segment evaluation and preview read a
-- profile's values in one row instead of pivoting profile_metrics. Kept with profile_metrics.
CREATE TABLE profile_metric_vectors (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  number_values MAP(VARCHAR, DOUBLE) NOT NULL,
  string_values MAP(VARCHAR, VARCHAR) NOT NULL,
  list_values MAP(VARCHAR, VARCHAR[]) NOT NULL
);
INSERT INTO profile_metric_vectors
SELECT p.tenant_id, p.workspace_id, p.profile_id,
  map_from_entries(coalesce(list({'key': m.metric_name, 'value': m.number_value}) FILTER (WHERE m.number_value IS NOT NULL), [])),
  map_from_entries(coalesce(list({'key': m.metric_name, 'value': m.string_value}) FILTER (WHERE m.string_value IS NOT NULL), [])),
  map_from_entries(coalesce(list({'key': m.metric_name, 'value': m.list_value}) FILTER (WHERE m.list_value IS NOT NULL), []))
FROM profiles p
LEFT JOIN profile_metrics m ON m.tenant_id = p.tenant_id AND m.workspace_id = p.workspace_id AND m.profile_id = p.profile_id
WHERE p.merged_into IS NULL
GROUP BY p.tenant_id, p.workspace_id, p.profile_id;
