-- Erasing a profile and its merged cluster (design §15), in the order src/privacy/erase.ts runs
-- them, in one transaction. The database file is then replaced by a copy of its live data
-- (Store.replaceWithCopy), which leaves the deleted rows behind. A rewrite may run them again on
-- its copy (Store.writeReplayable), so they read no clock and draw no random value.

/* @name erasure_cluster */
-- The survivor and every profile merged into it.
CREATE TEMP TABLE erasure_cluster AS
SELECT profile_id FROM profiles
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND (profile_id = $survivor OR merged_into = $survivor);

/* @name erasure_cluster_events */
-- The identifier keys of the cluster's stored events, so that counting them and keeping their
-- tombstones scan the events once.
CREATE TEMP TABLE erasure_events AS
SELECT identifier_keys FROM events
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_counts */
SELECT
  (SELECT count(*) FROM erasure_cluster) AS profiles,
  (SELECT count(*) FROM profile_identifiers
   WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster)) AS identifiers,
  (SELECT count(*) FROM profile_metrics
   WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster)) AS metrics,
  (SELECT count(*) FROM segment_members
   WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster)) AS segment_memberships,
  (SELECT count(*) FROM segment_history
   WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster))
  + (SELECT count(*) FROM profile_merge_records
   WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND survivor_profile_id IN (SELECT profile_id FROM erasure_cluster)) AS history_entries,
  (SELECT count(*) FROM erasure_events) AS events;

/* @name erasure_tombstones */
INSERT INTO identifier_tombstones
SELECT DISTINCT $tenant_id, $workspace_id, identifier_key, $now::TIMESTAMP FROM (
  SELECT identifier_key FROM profile_identifiers
  WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster)
  UNION
  SELECT unnest(identifier_keys) FROM erasure_events
);

/* @name erasure_drop_events */
DELETE FROM events
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_recent_events */
-- The live view's lines of the cluster (stored, or duplicates of its events): masked, but still
-- the person's activity.
DELETE FROM recent_events
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_identifiers */
DELETE FROM profile_identifiers
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_metric_inputs */
DELETE FROM metric_strings
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_last_seen */
DELETE FROM profile_last_seen
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_vectors */
DELETE FROM profile_metric_vectors
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_contributions */
DELETE FROM metric_contributions
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_memberships */
-- Removed without history and without an exit webhook: the profile is gone, not leaving.
DELETE FROM segment_members
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_segment_history */
DELETE FROM segment_history
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_merges */
-- A record names a survivor of its time, which is in the cluster as the last survivor is.
DELETE FROM profile_merge_records
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND survivor_profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_conflicts */
DELETE FROM identity_conflicts
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
  AND (profile_id IN (SELECT profile_id FROM erasure_cluster) OR other_profile_id IN (SELECT profile_id FROM erasure_cluster));

/* @name erasure_drop_webhooks */
-- Pending deliveries are cancelled; delivered ones go too, as they name the profile.
DELETE FROM webhook_outbox
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_consent */
DELETE FROM consent_ledger
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_drop_profiles */
DELETE FROM profiles
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND profile_id IN (SELECT profile_id FROM erasure_cluster);

/* @name erasure_record_audit */
-- Id and time come from the caller: a file rewrite may run the erasure again on its copy.
-- stream_copies_expire_at: a line received before the erasure may still hold the profile's
-- identifiers in the events stream (boxed) until the stream's max age after it; later lines are
-- not the erased profile's (tombstones). Null without a stream, and for a stream kept for ever.
INSERT INTO erasure_audit (erasure_id, tenant_id, workspace_id, profile_id, actor, erased_at, profiles, identifiers,
  metrics, segment_memberships, history_entries, events, purged_at, stream_copies_expire_at)
VALUES (
  $erasure_id, $tenant_id, $workspace_id, $profile_id, $actor, $now::TIMESTAMP,
  $profiles, $identifiers, $metrics, $segment_memberships, $history_entries, $events, NULL,
  (SELECT $now::TIMESTAMP + to_milliseconds(max_age_ms) FROM bus_stream_retention WHERE max_age_ms > 0)
);

/* @name erasure_drop_cluster */
DROP TABLE IF EXISTS erasure_cluster;

/* @name erasure_drop_cluster_events */
DROP TABLE IF EXISTS erasure_events;

/* @name erasure_mark_purged */
-- On the copy that replaces cds.duckdb (Store.replaceWithCopy), in the copy's transaction: the
-- copy holds no row of the erasures in its snapshot, so each of them is purged once the swap is
-- done. Erasures committed later are replayed onto the copy after this, unpurged. A crash before
-- the swap leaves the old file, where they are still unpurged.
UPDATE cds_rewrite.erasure_audit SET purged_at = $now::TIMESTAMP WHERE purged_at IS NULL;

/* @name erasure_unpurged */
SELECT count(*) AS unpurged FROM erasure_audit WHERE purged_at IS NULL;

/* @name erasure_audit_page */
-- Newest first, keyset paging on (erased_at, erasure_id); $after_* are NULL on the first page.
SELECT erasure_id, workspace_id, profile_id, actor, erased_at, purged_at, stream_copies_expire_at,
  profiles, identifiers, metrics, segment_memberships, history_entries, events
FROM erasure_audit
WHERE tenant_id = $tenant_id
  AND ($workspace_id IS NULL OR workspace_id = $workspace_id)
  AND ($after_at IS NULL OR (erased_at, erasure_id) < ($after_at::TIMESTAMP, $after_id))
ORDER BY erased_at DESC, erasure_id DESC
LIMIT $limit;
