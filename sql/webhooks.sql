-- The webhook outbox (design §14): what the sender delivers and what operators list and retry.

/* @name webhooks_due */
SELECT webhook_id, tenant_id, workspace_id, segment_id, profile_id, type, backfill, created_at, attempts, first_attempt_at,
  revoked_categories
FROM webhook_outbox
WHERE status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $wall_now::TIMESTAMP)
ORDER BY created_at, webhook_id
LIMIT $limit;

/* @name webhooks_due_without_consent */
-- At delivery time, a due delivery of a segment that names the consent categories its webhooks
-- need is withheld, not failed, unless the profile's consent now grants each: the newest choice
-- of the profile or of a profile merged into it, else the workspace's default. So a revocation
-- stops the deliveries still queued. Read first, so a round with nothing to withhold writes
-- nothing; only the ledgers of the due profiles (and of those merged into them) are read.
WITH needed AS (
  SELECT d.webhook_id, d.tenant_id, d.workspace_id, d.profile_id, w.consent_default,
    unnest(s.required_consent) AS category
  FROM webhook_outbox d
  JOIN segments s ON s.tenant_id = d.tenant_id AND s.workspace_id = d.workspace_id AND s.segment_id = d.segment_id
  JOIN workspaces w ON w.tenant_id = d.tenant_id AND w.workspace_id = d.workspace_id
  WHERE d.status = 'pending' AND (d.next_attempt_at IS NULL OR d.next_attempt_at <= $wall_now::TIMESTAMP)
    AND len(s.required_consent) > 0
),
ledger_owners AS (
  SELECT DISTINCT tenant_id, workspace_id, profile_id AS ledger_profile_id, profile_id FROM needed
  UNION
  SELECT p.tenant_id, p.workspace_id, p.profile_id, p.merged_into FROM profiles p
  WHERE p.merged_into IN (SELECT profile_id FROM needed)
),
choices AS (
  SELECT o.tenant_id, o.workspace_id, o.profile_id, l.category,
    arg_max(l.granted, (l.chosen_at, l.event_id)) AS granted
  FROM consent_ledger l
  JOIN ledger_owners o ON o.tenant_id = l.tenant_id AND o.workspace_id = l.workspace_id
    AND o.ledger_profile_id = l.profile_id
  GROUP BY ALL
)
SELECT DISTINCT n.webhook_id FROM needed n
LEFT JOIN choices c ON c.tenant_id = n.tenant_id AND c.workspace_id = n.workspace_id
  AND c.profile_id = n.profile_id AND c.category = n.category
WHERE NOT coalesce(c.granted, n.consent_default = 'allow');

/* @name webhooks_withhold */
UPDATE webhook_outbox SET status = 'withheld', last_error = 'consent not granted'
WHERE status = 'pending' AND webhook_id IN (SELECT unnest(CAST($ids AS JSON)::VARCHAR[]));

/* @name webhooks_mark_delivered */
UPDATE webhook_outbox SET status = 'delivered', attempts = attempts + 1, last_error = NULL,
  first_attempt_at = coalesce(first_attempt_at, $wall_now::TIMESTAMP), last_attempt_at = $wall_now::TIMESTAMP,
  delivered_at = $wall_now::TIMESTAMP, next_attempt_at = NULL
WHERE status = 'pending' AND webhook_id IN (SELECT unnest(CAST($ids AS JSON)::VARCHAR[]));

/* @name webhooks_mark_failed_attempt */
-- $give_up turns the row to failed: it stays listed for `cds webhooks retry`.
UPDATE webhook_outbox SET attempts = attempts + 1, last_error = $error,
  first_attempt_at = coalesce(first_attempt_at, $wall_now::TIMESTAMP), last_attempt_at = $wall_now::TIMESTAMP,
  status = CASE WHEN $give_up THEN 'failed' ELSE 'pending' END,
  next_attempt_at = CASE WHEN $give_up THEN NULL ELSE $next_attempt_at::TIMESTAMP END
WHERE status = 'pending' AND webhook_id = $webhook_id;

/* @name webhooks_list */
-- Newest first; keyset paging on (created_at, webhook_id), $after_* NULL on the first page.
SELECT webhook_id, tenant_id, workspace_id, segment_id, profile_id, type, backfill, status, attempts, created_at,
  first_attempt_at, last_attempt_at, next_attempt_at, delivered_at, last_error
FROM webhook_outbox
WHERE ($status IS NULL OR status = $status)
  AND ($after_webhook IS NULL OR (created_at, webhook_id) < ($after_created::TIMESTAMP, $after_webhook))
ORDER BY created_at DESC, webhook_id DESC
LIMIT $limit;

/* @name webhooks_requeue_failed */
-- A retried delivery gets a fresh 24 hours of attempts.
UPDATE webhook_outbox SET status = 'pending', next_attempt_at = NULL, first_attempt_at = NULL
WHERE status = 'failed' AND ($webhook_id IS NULL OR webhook_id = $webhook_id);

/* @name webhooks_list_for_workspace */
-- A workspace's deliveries, or one segment's ($segment_id), newest first, keyset paging as webhooks_list.
SELECT webhook_id, tenant_id, workspace_id, segment_id, profile_id, type, backfill, status, attempts, created_at,
  first_attempt_at, last_attempt_at, next_attempt_at, delivered_at, last_error
FROM webhook_outbox
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND ($segment_id IS NULL OR segment_id = $segment_id)
  AND ($status IS NULL OR status = $status)
  AND ($after_webhook IS NULL OR (created_at, webhook_id) < ($after_created::TIMESTAMP, $after_webhook))
ORDER BY created_at DESC, webhook_id DESC
LIMIT $limit;

/* @name webhooks_requeue_failed_for_workspace */
-- As webhooks_requeue_failed, within a workspace or one of its segments: a tenant retries its own
-- deliveries only.
UPDATE webhook_outbox SET status = 'pending', next_attempt_at = NULL, first_attempt_at = NULL
WHERE status = 'failed' AND tenant_id = $tenant_id AND workspace_id = $workspace_id
  AND ($segment_id IS NULL OR segment_id = $segment_id)
  AND ($webhook_id IS NULL OR webhook_id = $webhook_id);

/* @name webhooks_totals_for_workspace */
-- A workspace's deliveries queued in the last 7 days and 24 hours, by status.
SELECT status,
  count(*) FILTER (WHERE created_at >= $since_day::TIMESTAMP) AS last_24h,
  count(*) AS last_7d
FROM webhook_outbox
WHERE tenant_id = $tenant_id AND workspace_id = $workspace_id AND created_at >= $since_week::TIMESTAMP
GROUP BY status;
