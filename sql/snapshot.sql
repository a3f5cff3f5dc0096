-- The analysts' snapshot (design §3): a consistent copy of the tables they query, never the live file.

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
