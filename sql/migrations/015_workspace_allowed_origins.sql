-- Browser origins a workspace takes events from, set through the workspace API (issue 19), on top
-- of the operator's per-tenant `cors_origins`.
ALTER TABLE workspaces ADD COLUMN allowed_origins VARCHAR[] DEFAULT []::VARCHAR[];
