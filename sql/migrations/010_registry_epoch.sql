-- registry.json versions are epoch * 1,000,000 + a sequence the owning process counts; each
-- process that publishes the registry takes a new epoch first, so a later owner's versions are
-- always higher than an earlier one's (src/collector/registry-publisher.ts).
CREATE TABLE registry_epoch (epoch BIGINT NOT NULL);
INSERT INTO registry_epoch VALUES (0);
