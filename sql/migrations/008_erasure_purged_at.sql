-- When the database file was rewritten without an erasure's rows, so that no byte of them remains
-- (Store.replaceWithCopy): null until then. An erasure whose rewrite a crash cut off is rewritten
-- when the store next opens (src/privacy/erase.ts, resumePurges). Erasures recorded before this
-- column are null too and get one rewrite then: nothing recorded whether theirs completed.
ALTER TABLE erasure_audit ADD COLUMN purged_at TIMESTAMP;
