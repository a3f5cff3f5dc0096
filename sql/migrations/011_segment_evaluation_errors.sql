-- A segment whose predicate cannot be evaluated (stored before a rule existed, or written around
-- the API) carries why, and is skipped until its status is set again (src/segments/evaluate.ts).
ALTER TABLE segments ADD COLUMN evaluation_error VARCHAR;
ALTER TABLE segments ADD COLUMN evaluation_failed_at TIMESTAMP;
