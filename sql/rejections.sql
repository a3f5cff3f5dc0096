/* @name list_rejections_page */
-- Newest first; keyset on (rejected_at, file, event id, reason). Rows equal in all four are one
-- line rejected twice alike, and shown once. What a line held is never read: the reasons are
-- fixed codes, and no identifier is in any column.
SELECT DISTINCT coalesce(event_id, '') AS event_id, event_name, workspace_id, reason, received_at,
  rejected_at, file
FROM rejected_events
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id
  AND ($before_at IS NULL
    OR (rejected_at, file, coalesce(event_id, ''), reason) < ($before_at::TIMESTAMP, $before_file, $before_id, $before_reason))
ORDER BY rejected_at DESC, file DESC, event_id DESC, reason DESC
LIMIT $limit;
