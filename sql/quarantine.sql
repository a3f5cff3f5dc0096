-- What the quarantine of landing lines (src/ingest/quarantine.ts) reads from the database.

/* @name quarantine_tombstones */
-- The erased identifier keys of one workspace with the time of their erasure (design §15):
-- a quarantined line received at or before it that carries one of them is removed.
SELECT identifier_key, max(erased_at) AS erased_at
FROM identifier_tombstones
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
GROUP BY identifier_key;
