-- Issue 39 (consent travels with every event): each event's consent choices, per category, in a
-- ledger of the profile; the categories a workspace names and what an event without a choice
-- means for them; the categories a segment's webhooks need; and deliveries withheld for want of
-- consent (docs/decisions.md "Consent").
CREATE TABLE consent_ledger (
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  profile_id VARCHAR NOT NULL,
  category VARCHAR NOT NULL,
  granted BOOLEAN NOT NULL,
  chosen_at TIMESTAMP NOT NULL,
  event_id VARCHAR NOT NULL,
  source VARCHAR NOT NULL
);
ALTER TABLE workspaces ADD COLUMN consent_categories VARCHAR[];
ALTER TABLE workspaces ADD COLUMN consent_default VARCHAR;
UPDATE workspaces SET consent_categories = [], consent_default = 'allow';
ALTER TABLE segments ADD COLUMN required_consent VARCHAR[];
UPDATE segments SET required_consent = [];

-- A CHECK constraint cannot be altered: the outbox is made again, with `withheld` among its states
-- and `consent.changed` among its types, which names no segment but the categories revoked.
CREATE TABLE webhook_outbox_with_withheld (
  webhook_id VARCHAR PRIMARY KEY,
  tenant_id VARCHAR NOT NULL,
  workspace_id VARCHAR NOT NULL,
  segment_id VARCHAR,
  profile_id VARCHAR NOT NULL,
  type VARCHAR NOT NULL CHECK (type IN ('segment.entered', 'segment.exited', 'consent.changed')),
  backfill BOOLEAN NOT NULL,
  created_at TIMESTAMP NOT NULL,
  status VARCHAR NOT NULL CHECK (status IN ('pending', 'delivered', 'failed', 'withheld')),
  attempts INTEGER NOT NULL,
  next_attempt_at TIMESTAMP,
  first_attempt_at TIMESTAMP,
  last_attempt_at TIMESTAMP,
  last_error VARCHAR,
  delivered_at TIMESTAMP,
  revoked_categories VARCHAR[]
);
INSERT INTO webhook_outbox_with_withheld SELECT *, NULL FROM webhook_outbox;
DROP TABLE webhook_outbox;
ALTER TABLE webhook_outbox_with_withheld RENAME TO webhook_outbox;
