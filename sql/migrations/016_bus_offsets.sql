-- Cluster mode (issue 30): the stream sequence of the last event of each tenant this shard's
-- database holds, written in the transaction of the batch that stored it. A message at or below
-- it is already in (a redelivery after a crash between commit and ack), and an owner restored from
-- a backup resumes the tenant's consumer right after it (docs/cluster-design.md §4).
CREATE TABLE bus_offsets (
  tenant_id VARCHAR PRIMARY KEY,
  last_seq UBIGINT NOT NULL,
  updated_at TIMESTAMP NOT NULL
);
