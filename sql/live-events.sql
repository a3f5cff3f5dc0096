-- The live view's record of what became of each line (recent_events, migration 017): written by
-- one more step of the ingest batch (src/ingest/recent-events.ts), read by the events route and
-- its stream (src/ingest/live-events.ts), pruned by upkeep.
-- Its source is where the line came from as the live view names it: browser, server, or
-- segment_api for a server line the Segment tracking API took (the line's intake); lines written
-- before intake existed, and cds's own routes', keep their source as it was.

/* @name live_events_record */
-- The batch's lines with their outcome, after the events are stored: stored (its profile),
-- duplicate (the profile its first copy went to), rejected (the check's reason, or
-- no_identifiers). Lines in flight for an erased profile leave no trace, as in events; lines of
-- no known workspace have no reader. seq continues from the largest held, in line order (offsets
-- of the batch's rowids, which follow its lines). Identifier values are masked here as
-- profile views mask them (src/identity/mask.ts), so none reaches the table; a rejected line
-- keeps no properties at all (as rejected_events: it may hold values of any kind).
CREATE OR REPLACE TEMP MACRO live_last_position(text, ch) AS
  CASE WHEN strpos(text, ch) = 0 THEN 0 ELSE length(text) - strpos(reverse(text), ch) + 1 END;
CREATE OR REPLACE TEMP MACRO live_mask_domain(d) AS
  CASE WHEN live_last_position(d, '.') > 1 THEN d[1:1] || '***' || d[live_last_position(d, '.'):]
       ELSE d[1:1] || '***' END;
CREATE OR REPLACE TEMP MACRO live_mask_email(v) AS
  CASE WHEN live_last_position(v, '@') < 2 THEN v[1:1] || '***'
       ELSE v[1:1] || '***@' || live_mask_domain(v[live_last_position(v, '@') + 1:]) END;
CREATE OR REPLACE TEMP MACRO live_mask_value(kind, trimmed, lowered) AS
  CASE WHEN trimmed IS NULL THEN NULL
       WHEN kind = 'email' THEN live_mask_email(lowered)
       WHEN kind = 'phone' THEN trimmed[1:3]
         || repeat('*', greatest(length(trimmed) - length(trimmed[1:3]) - length(right(trimmed, 4)), 0))
         || right(trimmed, 4)
       ELSE trimmed[1:2] || '***' END;
-- Functions, not the -> and ->> operators, inside the lambda: there -> is read as a lambda arrow.
-- A key is read with a JSON pointer (as ingest_extract_identifiers reads it), whatever it spells.
-- Each value is read and trimmed, then lowered, in a list_transform of its own: a macro's
-- argument is copied wherever the macro uses it, so with the read passed in, every line parsed
-- its identifiers a dozen times (10,000 lines masked in 232 ms, against 46 ms so).
CREATE OR REPLACE TEMP MACRO live_masked_identifiers(ids) AS to_json(map_from_entries(list_transform(
  list_transform(
    list_transform(json_keys(ids),
      k -> {'key': k, 'trimmed': trim(json_extract_string(ids, '/' || replace(replace(k, '~', '~0'), '/', '~1')))}),
    entry -> {'key': entry.key, 'trimmed': entry.trimmed, 'lowered': lower(entry.trimmed)}),
  entry -> {'key': entry.key, 'value': live_mask_value(entry.key, entry.trimmed, entry.lowered)})));
CREATE OR REPLACE TEMP MACRO live_masked_properties(props) AS
  CASE WHEN props IS NULL THEN '{}'::JSON
       WHEN json_type(props, '$.identifiers') = 'OBJECT' THEN json_merge_patch(props,
         json_object('identifiers', live_masked_identifiers(json_extract(props, '$.identifiers'))))
       WHEN json_exists(props, '$.identifiers') THEN json_merge_patch(props, '{"identifiers":null}')
       ELSE props END;
-- Only a workspace's newest $cap lines of the batch are kept: masking a line's properties costs
-- about 5 µs, so a backlog's batch of 200k lines would pay a second for rows nobody watches
-- (a live view shows the newest lines; the window keeps 10,000 per workspace).
-- Kept in a table of its own: as a CTE read twice, with its window over rowid, the statement
-- failed DuckDB fatally (a UHUGEINT vector where the executor expected BIGINT).
CREATE TEMP TABLE live_kept AS
SELECT seq FROM (
  SELECT rowid AS seq, tenant_id, workspace_id FROM ingest_checked
  WHERE tenant_id IS NOT NULL AND workspace_id IS NOT NULL AND reject_reason IS DISTINCT FROM 'unknown_workspace'
)
QUALIFY row_number() OVER (PARTITION BY tenant_id, workspace_id ORDER BY seq DESC) <= $cap;

/* @name live_events_outcomes */
CREATE TEMP TABLE live_outcomes AS
WITH decided AS (
  SELECT seq, 'stored' AS outcome, NULL::VARCHAR AS reason, profile_id FROM ingest_event_profiles
  UNION ALL
  SELECT seq, 'rejected', 'no_identifiers', NULL FROM ingest_accepted ANTI JOIN ingest_event_profiles USING (seq)
  UNION ALL
  SELECT seq, 'erased', NULL, NULL FROM ingest_erased
)
SELECT c.rowid AS seq, c.tenant_id, c.workspace_id, c.dedup_hash, c.event_id, c.event_name, c.occured_at, c.received_at,
  CASE WHEN c.source = 'server' AND c.intake = 'segment_api' THEN 'segment_api' ELSE c.source END AS source, c.properties,
  CASE WHEN c.reject_reason IS NOT NULL THEN 'rejected' ELSE coalesce(d.outcome, 'duplicate') END AS outcome,
  coalesce(c.reject_reason, d.reason) AS reason, d.profile_id
FROM ingest_checked c SEMI JOIN live_kept k ON k.seq = c.rowid LEFT JOIN decided d ON d.seq = c.rowid
WHERE d.outcome IS DISTINCT FROM 'erased';

/* @name live_events_insert */
-- A statement of its own: only the last statement of a text takes the parameters.
INSERT INTO recent_events
SELECT o.tenant_id, o.workspace_id, b.last_seq + (o.seq - b.first_rowid) + 1, o.event_id, o.event_name, o.occured_at,
  o.received_at, o.source, o.outcome, o.reason, coalesce(o.profile_id, f.profile_id),
  CASE WHEN o.outcome <> 'rejected' THEN live_masked_properties(o.properties) END, $now::TIMESTAMP
FROM live_outcomes o
CROSS JOIN (
  SELECT (SELECT coalesce(max(seq), 0) FROM recent_events) AS last_seq, (SELECT min(seq) FROM live_outcomes) AS first_rowid
) b
LEFT JOIN (
  -- A duplicate's first copy is a stored event the dedup index found, or a line of this batch.
  SELECT dedup_hash, any_value(profile_id) AS profile_id FROM (
    SELECT dedup_hash, profile_id FROM ingest_stored_keys
    UNION ALL
    SELECT a.dedup_hash, p.profile_id FROM ingest_accepted a JOIN ingest_event_profiles p USING (seq)
  )
  SEMI JOIN (SELECT dedup_hash FROM live_outcomes WHERE outcome = 'duplicate') d USING (dedup_hash)
  GROUP BY dedup_hash
) f ON o.outcome = 'duplicate' AND f.dedup_hash = o.dedup_hash;

/* @name live_events_drop_outcomes */
DROP TABLE IF EXISTS live_outcomes; DROP TABLE IF EXISTS live_kept;

/* @name live_events_record_quarantined */
-- The lines of a quarantined part, as far as they parse, with the quarantine's reason: its
-- workspace's lines only (a part lies in one landing partition), and no properties. A part is
-- often one line too long for a batch: $max_object_size, the part's size, lets it be read here.
INSERT INTO recent_events
SELECT tenant_id, workspace_id, (SELECT coalesce(max(seq), 0) FROM recent_events) + row_number() OVER (), event_id,
  event_name, occured_at, received_at, source, 'quarantined', $reason, NULL, NULL, $now::TIMESTAMP
FROM (
  SELECT r.event.tenant_id AS tenant_id, r.event.workspace_id AS workspace_id, r.event.id AS event_id,
    r.event.name AS event_name, try_cast(r.event.occured_at AS TIMESTAMPTZ)::TIMESTAMP AS occured_at,
    try_cast(r.received_at AS TIMESTAMPTZ)::TIMESTAMP AS received_at,
    CASE WHEN r.source = 'server' AND r.intake = 'segment_api' THEN 'segment_api' ELSE r.source END AS source
  FROM read_json(CAST($paths AS JSON)::VARCHAR[],
    format = 'newline_delimited', ignore_errors = true, maximum_object_size = $max_object_size,
    columns = {
      received_at: 'VARCHAR', source: 'VARCHAR', intake: 'VARCHAR',
      event: 'STRUCT(id VARCHAR, name VARCHAR, tenant_id VARCHAR, workspace_id VARCHAR, occured_at VARCHAR)'
    }) r
)
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id;

/* @name live_events_since */
-- What a committed batch added, per workspace: the stream of each is told its newest seq.
SELECT tenant_id, workspace_id, max(seq) AS last_seq FROM recent_events WHERE seq > $after GROUP BY ALL;

/* @name live_events_last_seq */
SELECT coalesce(max(seq), 0) AS last_seq FROM recent_events;

/* @name live_events_page */
-- Newest first below $before, or oldest first above $after (a stream catching up); the filters
-- are NULL when not given, and the name is looked for as a part of event names (any case). A
-- profile merged away since answers as its survivor, and the profile filter finds the rows of the profiles merged into the one named. A source no collector writes
-- (an unparsable line's) answers NULL.
SELECT r.seq, r.event_id, r.event_name,
  strftime(r.occured_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS occured_at,
  strftime(r.received_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS received_at,
  CASE WHEN r.source IN ('browser', 'server', 'segment_api') THEN r.source END AS source,
  r.outcome, r.reason, coalesce(p.merged_into, r.profile_id) AS profile_id, r.properties::VARCHAR AS properties,
  -- The profile's first email, masked whatever the deployment shows plain: who the line is about.
  (SELECT arg_min(i.masked_value, i.first_seen_at) FROM profile_identifiers i
   WHERE i.tenant_id = r.tenant_id AND i.workspace_id = r.workspace_id
     AND i.profile_id = coalesce(p.merged_into, r.profile_id) AND i.identifier_type = 'email') AS email
FROM (
  SELECT * FROM recent_events
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
    AND ($before IS NULL OR seq < $before) AND ($after IS NULL OR seq > $after)
    AND ($event_name IS NULL OR contains(lower(event_name), lower($event_name)))
    AND ($outcome IS NULL OR outcome = $outcome)
    AND ($source IS NULL OR source = $source)
    AND ($profile_id IS NULL OR profile_id = $profile_id OR profile_id IN (
      SELECT profile_id FROM profiles
      WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND merged_into = $profile_id))
  ORDER BY CASE WHEN $after IS NULL THEN -seq ELSE seq END
  LIMIT $limit
) r
LEFT JOIN profiles p ON p.tenant_id = r.tenant_id AND p.workspace_id = r.workspace_id AND p.profile_id = r.profile_id
ORDER BY CASE WHEN $after IS NULL THEN -r.seq ELSE r.seq END;

/* @name live_events_prune_due */
SELECT coalesce((SELECT min(recorded_at) FROM recent_events) < $cutoff::TIMESTAMP, false)
  OR coalesce((SELECT max(n) FROM (SELECT count(*) AS n FROM recent_events GROUP BY tenant_id, workspace_id)) > $cap, false)
  AS due;

/* @name live_events_prune */
-- The window: the last day, and at most $cap rows per workspace.
DELETE FROM recent_events r USING (
  SELECT tenant_id, workspace_id, seq FROM recent_events
  QUALIFY recorded_at < $cutoff::TIMESTAMP
    OR row_number() OVER (PARTITION BY tenant_id, workspace_id ORDER BY seq DESC) > $cap
) x
WHERE r.tenant_id = x.tenant_id AND r.workspace_id = x.workspace_id AND r.seq = x.seq;
