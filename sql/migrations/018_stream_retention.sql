-- Cluster mode (issue 36): how long the events stream keeps a message, as the owner of this
-- shard last read it from the stream (one row; none in the embedded default). An erasure records
-- from it when the last stream copy of the erased profile's events expires.
CREATE TABLE bus_stream_retention (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  max_age_ms BIGINT NOT NULL,
  read_at TIMESTAMP NOT NULL
);
-- Null for an erasure in the embedded default, where no stream holds events, and for those made
-- before this column existed.
ALTER TABLE erasure_audit ADD COLUMN stream_copies_expire_at TIMESTAMP;
