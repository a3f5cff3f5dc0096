-- Paths into properties.identifiers are refused since this version (src/ids.ts): what a metric or
-- a dedup key reads is stored in plain text, and identifier values may only be stored sealed.
-- Definitions and event types stored before that are changed here, once, and the plain values
-- they left are removed (their bytes leave the file at its next rewrite, such as an erasure's).

-- A definition reading identifiers goes, and with it every value of its metric name: its values
-- are mixed with its siblings' (latest, recent, sums). The siblings are backfilled again from the
-- stored events by the next ingest pass, which rebuilds the name without it.
CREATE TEMP TABLE identifier_metrics AS
SELECT tenant_id, list(DISTINCT metric_name) AS metric_names FROM metric_definitions
WHERE value_path = 'properties.identifiers' OR starts_with(value_path, 'properties.identifiers.')
GROUP BY tenant_id;
DELETE FROM metric_definitions
WHERE value_path = 'properties.identifiers' OR starts_with(value_path, 'properties.identifiers.');
DELETE FROM metric_contributions c USING identifier_metrics m
WHERE c.tenant_id = m.tenant_id AND list_contains(m.metric_names, c.metric_name);
DELETE FROM metric_strings s USING identifier_metrics m
WHERE s.tenant_id = m.tenant_id AND list_contains(m.metric_names, s.metric_name);
-- The table profile_metrics held them too; migration 020 made it a view of profile_metric_vectors,
-- so clearing the rows of values is enough (and runs at every schema since).
UPDATE profile_metric_vectors v SET
  number_values = map_from_entries(list_filter(map_entries(number_values), e -> NOT list_contains(m.metric_names, e.key))),
  string_values = map_from_entries(list_filter(map_entries(string_values), e -> NOT list_contains(m.metric_names, e.key))),
  list_values = map_from_entries(list_filter(map_entries(list_values), e -> NOT list_contains(m.metric_names, e.key)))
FROM identifier_metrics m WHERE v.tenant_id = m.tenant_id;
UPDATE metric_definitions d SET backfilled_at = NULL FROM identifier_metrics m
WHERE d.tenant_id = m.tenant_id AND list_contains(m.metric_names, d.metric_name);
DROP TABLE identifier_metrics;

-- An event type keeps its other key paths, or dedups by id when none is left. The stored events'
-- keys built from its paths held the identifier values: they are replaced by a constant, as only
-- dedup_hash takes part in deduplication.
CREATE TEMP TABLE identifier_event_types AS
SELECT tenant_id, event_name FROM event_types
WHERE list_bool_or(list_transform(dedup_key_paths,
  path -> path = 'properties.identifiers' OR starts_with(path, 'properties.identifiers.')));
UPDATE event_types t SET
  dedup_key_paths = nullif(list_filter(dedup_key_paths,
    path -> NOT (path = 'properties.identifiers' OR starts_with(path, 'properties.identifiers.'))), []),
  dedup_entity = CASE WHEN len(list_filter(dedup_key_paths,
    path -> NOT (path = 'properties.identifiers' OR starts_with(path, 'properties.identifiers.')))) = 0
    THEN NULL ELSE dedup_entity END
FROM identifier_event_types i WHERE t.tenant_id = i.tenant_id AND t.event_name = i.event_name;
UPDATE events e SET dedup_key = 'redacted:identifiers' FROM identifier_event_types i
WHERE e.tenant_id = i.tenant_id AND e.event_name = i.event_name AND e.dedup_key <> 'id:' || e.event_id;
DROP TABLE identifier_event_types;
