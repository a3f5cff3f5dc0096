-- Issue 37 (lookups proportional to the batch): an ingest batch advances each touched profile's
-- values from its row of values and the batch's events, instead of recomputing them from every
-- stored input, which read metric_contributions, metric_strings and profile_metrics whole each
-- batch. So the row keeps what advancing needs besides the values: the newest distinct strings of
-- each string metric with their times and how many it keeps (string_entries), and when its values
-- were computed (updated_at, NULL where a migrated profile had none). profile_metrics becomes a
-- view of it (one row a profile and metric, as before), so the values are stored once.
ALTER TABLE profile_metric_vectors RENAME TO profile_metric_vectors_before;
CREATE TABLE profile_metric_vectors (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  number_values MAP(VARCHAR, DOUBLE) NOT NULL,
  string_values MAP(VARCHAR, VARCHAR) NOT NULL,
  list_values MAP(VARCHAR, VARCHAR[]) NOT NULL,
  string_entries MAP(VARCHAR, STRUCT(recent_keep INTEGER, entries STRUCT(seen_at TIMESTAMP, value VARCHAR)[])) NOT NULL,
  updated_at TIMESTAMP
);
INSERT INTO profile_metric_vectors
SELECT v.tenant_id, v.workspace_id, v.profile_id, v.number_values, v.string_values, v.list_values,
  coalesce(s.string_entries, MAP {}), u.updated_at
FROM profile_metric_vectors_before v
LEFT JOIN (
  SELECT tenant_id, workspace_id, profile_id,
    map_from_entries(list({'key': metric_name, 'value': {'recent_keep': recent_keep, 'entries': entries[1:coalesce(recent_keep, 1)]}})) AS string_entries
  FROM (
    SELECT tenant_id, workspace_id, profile_id, metric_name, max(recent_keep) AS recent_keep,
      list_sort(list({'seen_at': seen_at, 'value': value}), 'DESC') AS entries
    FROM (
      SELECT tenant_id, workspace_id, profile_id, metric_name, value, max(seen_at) AS seen_at, max(recent_keep) AS recent_keep
      FROM metric_strings
      GROUP BY tenant_id, workspace_id, profile_id, metric_name, value
    )
    GROUP BY tenant_id, workspace_id, profile_id, metric_name
  )
  GROUP BY tenant_id, workspace_id, profile_id
) s ON s.tenant_id = v.tenant_id AND s.workspace_id = v.workspace_id AND s.profile_id = v.profile_id
LEFT JOIN (
  SELECT tenant_id, workspace_id, profile_id, max(updated_at) AS updated_at FROM profile_metrics GROUP BY ALL
) u ON u.tenant_id = v.tenant_id AND u.workspace_id = v.workspace_id AND u.profile_id = v.profile_id;
DROP TABLE profile_metric_vectors_before;
DROP TABLE profile_metrics;
CREATE VIEW profile_metrics AS
SELECT tenant_id, workspace_id, profile_id, entry.key AS metric_name, entry.value AS number_value,
  NULL::VARCHAR AS string_value, NULL::VARCHAR[] AS list_value, updated_at
FROM (SELECT tenant_id, workspace_id, profile_id, updated_at, unnest(map_entries(number_values)) AS entry FROM profile_metric_vectors)
UNION ALL
SELECT tenant_id, workspace_id, profile_id, entry.key, NULL, entry.value, NULL, updated_at
FROM (SELECT tenant_id, workspace_id, profile_id, updated_at, unnest(map_entries(string_values)) AS entry FROM profile_metric_vectors)
UNION ALL
SELECT tenant_id, workspace_id, profile_id, entry.key, NULL, NULL, entry.value, updated_at
FROM (SELECT tenant_id, workspace_id, profile_id, updated_at, unnest(map_entries(list_values)) AS entry FROM profile_metric_vectors);

-- Inputs are appended by each batch, under the profile each was added for, and compacted (one row a
-- day and contributor, each under its survivor) once they are many, one run of rows at a time:
-- the row count after the last compaction, the events read into inputs since (a bound on the rows
-- appended; counting the tables costs a scan of both once rows were deleted), the parts of the
-- compaction under way (0 when none is), the next one to compact, and where each table's rows
-- ended when it began (rows appended since are left to the next one).
CREATE TABLE metric_inputs_compaction (
  id INTEGER PRIMARY KEY,
  compacted_rows BIGINT NOT NULL,
  appended_since BIGINT NOT NULL,
  parts INTEGER NOT NULL,
  next_part INTEGER NOT NULL,
  contributions_end BIGINT NOT NULL,
  strings_end BIGINT NOT NULL
);
INSERT INTO metric_inputs_compaction
SELECT 1, (SELECT count(*) FROM metric_contributions) + (SELECT count(*) FROM metric_strings), 0, 0, 0, 0, 0;
