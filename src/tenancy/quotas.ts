import type { Config } from '../config.js';
import { QuotaExceededError } from '../errors.js';
import type { Session } from '../store/session.js';

/** What a tenant holds a bounded number of (docs/decisions.md "Quotas"). */
export type Quota =
  | 'workspaces'
  | 'segments'
  | 'metric_definitions'
  | 'event_types'
  | 'identifier_types'
  | 'tokens';

const LIMIT_KEY = {
  workspaces: 'quota_workspaces',
  segments: 'quota_segments',
  metric_definitions: 'quota_metric_definitions',
  event_types: 'quota_event_types',
  identifier_types: 'quota_identifier_types',
  tokens: 'quota_tokens',
} as const satisfies Record<Quota, keyof Config>;

/**
 * Refuses to add `adding` more of `quota` to a tenant that would then hold more than its limit.
 * Runs inside the write transaction of the insert: writes are serialised, so two creates at once
 * cannot both see room for one.
 */
export async function requireRoom(
  session: Session,
  config: Pick<Config, (typeof LIMIT_KEY)[Quota]>,
  tenantId: string,
  quota: Quota,
  adding = 1,
): Promise<void> {
  const limit = config[LIMIT_KEY[quota]];
  const row = await session.one<{ held: number }>(`quota_count_${quota}`, { tenant_id: tenantId });
  if ((row?.held ?? 0) + adding > limit) throw new QuotaExceededError(quota, limit);
}
