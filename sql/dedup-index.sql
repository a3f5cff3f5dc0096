-- The dedup index (src/ingest/dedup-index.ts): each stored event's dedup key as a 32-bit
-- fingerprint (the low bits of dedup_hash, an MD5), placed in the slot its next 32 bits (home)
-- name, with the second it was ingested, held in memory so a batch finds the stored events its
-- keys may name without reading every stored key. A fingerprint only says where to look: every
-- match is confirmed against events.dedup_hash. The mask, not %: a modulo of a UHUGEINT costs
-- 100 times more.

/* @name dedup_index_events */
-- Cheap (table statistics), and it changes with any insert or delete, whoever made it.
SELECT count(*) AS events FROM events;

/* @name dedup_index_checksum */
-- What a saved dedup index is checked against (src/store/index-files.ts): the count, and the sum
-- of the rows' hashes of what the index follows, which any change of a row moves.
SELECT count(*) AS events, coalesce(sum(hash(dedup_hash, ingested_at)), 0)::VARCHAR AS events_sum FROM events;

/* @name dedup_index_scan */
SELECT (dedup_hash & 4294967295::UHUGEINT)::UINTEGER AS fingerprint,
  ((dedup_hash >> 32) & 4294967295::UHUGEINT)::UINTEGER AS home,
  (epoch_ms(ingested_at) // 1000)::UINTEGER AS second
FROM events;

/* @name dedup_index_batch_fingerprints */
SELECT DISTINCT (dedup_hash & 4294967295::UHUGEINT)::UINTEGER AS fingerprint,
  ((dedup_hash >> 32) & 4294967295::UHUGEINT)::UINTEGER AS home
FROM ingest_checked WHERE reject_reason IS NULL;

/* @name dedup_index_create_stored_keys */
CREATE TEMP TABLE ingest_stored_keys (dedup_hash UHUGEINT, profile_id VARCHAR);

/* @name dedup_index_find_stored */
-- The stored events ingested in [$from_us, $to_us) whose key a line of the batch with one of the
-- $fingerprints holds: ingested_at follows the table's order, so only those row groups are read.
INSERT INTO ingest_stored_keys
SELECT e.dedup_hash, any_value(e.profile_id)
FROM events e
WHERE e.ingested_at >= make_timestamp($from_us::BIGINT) AND e.ingested_at < make_timestamp($to_us::BIGINT)
  AND e.dedup_hash IN (
    SELECT dedup_hash FROM ingest_checked
    WHERE reject_reason IS NULL
      AND list_contains(CAST($fingerprints AS JSON)::UINTEGER[], (dedup_hash & 4294967295::UHUGEINT)::UINTEGER)
  )
GROUP BY e.dedup_hash;

/* @name dedup_index_found_fingerprints */
-- The entries the index holds already and the batch need not add: those of the stored keys
-- found, unless a line of the batch holds another key of the same fingerprint (a key the batch
-- may store, which needs its own entry). An entry is a fingerprint in its home.
SELECT (dedup_hash & 4294967295::UHUGEINT)::UINTEGER AS fingerprint,
  ((dedup_hash >> 32) & 4294967295::UHUGEINT)::UINTEGER AS home
FROM ingest_stored_keys
EXCEPT
SELECT (c.dedup_hash & 4294967295::UHUGEINT)::UINTEGER, ((c.dedup_hash >> 32) & 4294967295::UHUGEINT)::UINTEGER
FROM ingest_checked c ANTI JOIN ingest_stored_keys k ON k.dedup_hash = c.dedup_hash
WHERE c.reject_reason IS NULL;
