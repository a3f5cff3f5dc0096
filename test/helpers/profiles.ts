import type { Context } from '../../src/context.js';
import { vectorizeWorkspace } from '../../src/metrics/materialize.js';

export type MetricValue = number | string | string[];

/**
 * Puts profiles and metric values straight into the tables ingest fills, for tests of what reads
 * them (preview, member counts) before any event has been ingested.
 */
export async function seedProfiles(
  context: Context,
  tenantId: string,
  workspaceId: string,
  profiles: Record<string, Record<string, MetricValue>>,
): Promise<void> {
  const at = context.clock.now().toISOString();
  await context.store.write(async (session) => {
    for (const [profileId, metrics] of Object.entries(profiles)) {
      await session.runText(
        'INSERT INTO profiles VALUES ($tenant_id, $workspace_id, $profile_id, $at::TIMESTAMP, $at::TIMESTAMP, NULL)',
        { tenant_id: tenantId, workspace_id: workspaceId, profile_id: profileId, at },
      );
      for (const [metricName, value] of Object.entries(metrics)) {
        await session.runText(
          `INSERT INTO profile_metrics VALUES ($tenant_id, $workspace_id, $profile_id, $metric_name,
             $number_value, $string_value, CAST($list_value AS JSON)::VARCHAR[], $at::TIMESTAMP)`,
          {
            tenant_id: tenantId,
            workspace_id: workspaceId,
            profile_id: profileId,
            metric_name: metricName,
            number_value: typeof value === 'number' ? value : null,
            string_value: typeof value === 'string' ? value : null,
            list_value: Array.isArray(value) ? JSON.stringify(value) : null,
            at,
          },
        );
      }
    }
    await vectorizeWorkspace(session, tenantId, workspaceId);
  });
}

/** `count` bare profiles (no metrics) named `bulk-<n>`. */
export async function seedBareProfiles(
  context: Context,
  tenantId: string,
  workspaceId: string,
  count: number,
): Promise<void> {
  await context.store.write(async (session) => {
    await session.runText(
      `INSERT INTO profiles SELECT $tenant_id, $workspace_id, 'bulk-' || i, $at::TIMESTAMP, $at::TIMESTAMP, NULL
       FROM range($count) t(i)`,
      {
        tenant_id: tenantId,
        workspace_id: workspaceId,
        count,
        at: context.clock.now().toISOString(),
      },
    );
    await vectorizeWorkspace(session, tenantId, workspaceId);
  });
}
