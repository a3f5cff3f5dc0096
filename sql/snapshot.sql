-- The analysts' tables (design §3): what a snapshot and a Parquet export hold, as views over the
-- live tables on the session that copies them. Only columns a client reads as they are: times as
-- TIMESTAMPTZ in UTC (the live columns are TIMESTAMP holding UTC), no ingest internals such as
-- dedup_hash (a UHUGEINT pandas cannot take), no identifier values (design §3, §11).

/* @name analyst_views_create */
CREATE OR REPLACE TEMP VIEW analyst_profiles AS
SELECT p.tenant_id, p.workspace_id, p.profile_id,
  timezone('UTC', p.created_at) AS created_at,
  timezone('UTC', greatest(p.last_seen_at, l.last_seen_at)) AS last_seen_at,
  p.merged_into
FROM profiles p
LEFT JOIN (
  SELECT tenant_id, workspace_id, profile_id, max(last_seen_at) AS last_seen_at
  FROM profile_last_seen GROUP BY ALL
) l USING (tenant_id, workspace_id, profile_id);
CREATE OR REPLACE TEMP VIEW analyst_profile_metrics AS
SELECT tenant_id, workspace_id, profile_id, metric_name, number_value, string_value, list_value,
  timezone('UTC', updated_at) AS updated_at
FROM profile_metrics;
CREATE OR REPLACE TEMP VIEW analyst_segments AS
SELECT tenant_id, workspace_id, segment_id, display_name, predicate, status,
  on_enter, on_exit, on_backfill,
  timezone('UTC', created_at) AS created_at, timezone('UTC', updated_at) AS updated_at,
  timezone('UTC', evaluated_at) AS evaluated_at,
  evaluation_error, timezone('UTC', evaluation_failed_at) AS evaluation_failed_at
FROM segments;
CREATE OR REPLACE TEMP VIEW analyst_segment_members AS
SELECT tenant_id, workspace_id, segment_id, profile_id, timezone('UTC', entered_at) AS entered_at
FROM segment_members;
CREATE OR REPLACE TEMP VIEW analyst_segment_history AS
SELECT tenant_id, workspace_id, segment_id, profile_id, change, backfill,
  timezone('UTC', changed_at) AS changed_at
FROM segment_history;
-- An event's profile is its survivor: ingest leaves a merged profile's events as they were stored.
CREATE OR REPLACE TEMP VIEW analyst_events AS
SELECT e.tenant_id, e.workspace_id, e.event_id, e.event_name, e.dedup_key, coalesce(p.merged_into, e.profile_id) AS profile_id,
  e.source, timezone('UTC', e.occured_at) AS occured_at, timezone('UTC', e.received_at) AS received_at,
  timezone('UTC', e.ingested_at) AS ingested_at, e.properties, e.identifier_keys
FROM events e
LEFT JOIN profiles p ON p.tenant_id = e.tenant_id AND p.workspace_id = e.workspace_id AND p.profile_id = e.profile_id;
-- The export's events, with the UTC day they are partitioned by (src/store/parquet-export.ts).
CREATE OR REPLACE TEMP VIEW analyst_events_by_date AS
SELECT *, CAST(timezone('UTC', occured_at) AS DATE) AS date FROM analyst_events;

/* @name analyst_views_drop */
DROP VIEW IF EXISTS analyst_profiles; DROP VIEW IF EXISTS analyst_profile_metrics;
DROP VIEW IF EXISTS analyst_segments; DROP VIEW IF EXISTS analyst_segment_members;
DROP VIEW IF EXISTS analyst_segment_history; DROP VIEW IF EXISTS analyst_events_by_date;
DROP VIEW IF EXISTS analyst_events;

/* @name snapshot_detach */
DETACH cds_snapshot;

/* @name snapshot_row_counts */
SELECT
  (SELECT count(*) FROM cds_snapshot.profiles) AS profiles,
  (SELECT count(*) FROM cds_snapshot.profile_metrics) AS profile_metrics,
  (SELECT count(*) FROM cds_snapshot.segment_members) AS segment_members,
  (SELECT count(*) FROM cds_snapshot.segment_history) AS segment_history,
  (SELECT count(*) FROM cds_snapshot.events) AS events,
  (SELECT count(*) FROM cds_snapshot.segments) AS segments;
