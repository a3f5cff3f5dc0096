import type { Context } from '../../src/context.js';

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
      await session.runText(
        `INSERT INTO profile_metric_vectors VALUES ($tenant_id, $workspace_id, $profile_id,
           CAST($numbers AS JSON)::MAP(VARCHAR, DOUBLE), CAST($strings AS JSON)::MAP(VARCHAR, VARCHAR),
           CAST($lists AS JSON)::MAP(VARCHAR, VARCHAR[]),
           CAST($string_entries AS JSON)::MAP(VARCHAR, STRUCT(recent_keep INTEGER, entries STRUCT(seen_at TIMESTAMP, value VARCHAR)[])),
           $at::TIMESTAMP)`,
        {
          tenant_id: tenantId,
          workspace_id: workspaceId,
          profile_id: profileId,
          ...rowOfValues(metrics, at),
          at,
        },
      );
    }
  });
}

/**
 * A profile's row of values as ingest writes it (migration 020): each string and list value
 * also as the entries a batch advances, all seen at `at`.
 */
function rowOfValues(metrics: Record<string, MetricValue>, at: string) {
  const seenAt = at.replace('T', ' ').replace('Z', '');
  const numbers: Record<string, number> = {};
  const strings: Record<string, string> = {};
  const lists: Record<string, string[]> = {};
  const stringEntries: Record<string, { recent_keep: number | null; entries: unknown[] }> = {};
  for (const [name, value] of Object.entries(metrics)) {
    if (typeof value === 'number') {
      numbers[name] = value;
      continue;
    }
    const values = Array.isArray(value) ? value : [value];
    if (Array.isArray(value)) lists[name] = value;
    else strings[name] = value;
    stringEntries[name] = {
      recent_keep: Array.isArray(value) ? value.length : null,
      entries: values.map((entry) => ({ seen_at: seenAt, value: entry })),
    };
  }
  return {
    numbers: JSON.stringify(numbers),
    strings: JSON.stringify(strings),
    lists: JSON.stringify(lists),
    string_entries: JSON.stringify(stringEntries),
  };
}

/** `count` bare profiles (no metrics) named `bulk-<n>`. */
export async function seedBareProfiles(
  context: Context,
  tenantId: string,
  workspaceId: string,
  count: number,
): Promise<void> {
  await context.store.write(async (session) => {
    const params = {
      tenant_id: tenantId,
      workspace_id: workspaceId,
      count,
      at: context.clock.now().toISOString(),
    };
    await session.runText(
      `INSERT INTO profiles SELECT $tenant_id, $workspace_id, 'bulk-' || i, $at::TIMESTAMP, $at::TIMESTAMP, NULL
       FROM range($count) t(i)`,
      params,
    );
    await session.runText(
      `INSERT INTO profile_metric_vectors
       SELECT $tenant_id, $workspace_id, 'bulk-' || i, MAP {}, MAP {}, MAP {}, MAP {}, $at::TIMESTAMP
       FROM range($count) t(i)`,
      params,
    );
  });
}
