-- What `/metrics` reads of stored state at each scrape (docs/decisions.md "Prometheus metrics").

/* @name telemetry_stored_gauges */
SELECT
  (SELECT count(*) FROM webhook_outbox WHERE status = 'pending') AS webhooks_pending,
  (SELECT count(*) FROM webhook_outbox WHERE status = 'failed') AS webhooks_failed,
  (SELECT count(*) FROM erasure_audit WHERE purged_at IS NULL) AS erasures_awaiting_purge;
