-- `cds import` (src/import/run.ts): what it asks of the ingest records, beside the batches
-- themselves, which the landing engine runs and records as for any landing file.

/* @name import_done_files */
-- The chunk files of one import that a batch committed: each lies in the import's own folder
-- ($folder, `/import=<identity>/`) of its partition.
SELECT path FROM ingested_files WHERE contains(path, $folder);

/* @name import_rejection_reasons */
-- Why ingest refused lines of the given chunk files, by reason.
SELECT reason, count(*) AS lines
FROM rejected_events
WHERE list_contains(CAST($paths AS JSON)::VARCHAR[], file)
GROUP BY reason;
