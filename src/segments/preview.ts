import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { profileContacts } from '../identity/profile-view.js';
import { fillSlots, sql } from '../store/sql-files.js';
import { requireWorkspace } from '../tenancy/workspaces.js';
import { backfilledBehaviours } from './behaviour-metrics.js';
import { compilePredicate } from './compile.js';
import { parseRule } from './parse-rule.js';
import { behavioursIn } from './predicate.js';

/** Preview counts look at this many profiles at most (interface "Limits"). */
export const PREVIEW_SCAN_LIMIT = 20_000;

export const previewResultSchema = z.object({
  workspace_id: z.string(),
  matched_profiles: z.number(),
  scanned_profiles: z.number(),
  truncated: z.boolean(),
  workspace_profiles: z.number(),
  workspace_identified_profiles: z.number(),
  /** Asked with `sample_size`: the first matching profiles scanned, masked as members are. */
  sample: z
    .array(
      z.object({
        profile_id: z.string(),
        email: z.string().nullable(),
        phone: z.string().nullable(),
      }),
    )
    .optional(),
});

/** The most profiles a preview's sample shows. */
export const PREVIEW_SAMPLE_LIMIT = 25;

export type PreviewResult = z.infer<typeof previewResultSchema>;

export async function previewSegment(
  context: Context,
  tenantId: string,
  workspaceId: string,
  rawPredicate: unknown,
  sampleSize = 0,
): Promise<PreviewResult> {
  return context.store.read(async (session) => {
    await requireWorkspace(session, tenantId, workspaceId);
    const predicate = await parseRule(session, rawPredicate, tenantId, workspaceId);
    const behaviours = behavioursIn(predicate);
    const computed = await backfilledBehaviours(session, tenantId, workspaceId, behaviours);
    const compiled = compilePredicate(predicate, {
      behaviours: new Set(
        behaviours.map((b) => b.metricName).filter((name) => !computed.has(name)),
      ),
      today: nowIso(context).slice(0, 10),
    });
    const statement = fillSlots(sql('preview_segment'), {
      behaviours: compiled.behaviours,
      behaviour_joins: compiled.behaviourJoins,
      columns: compiled.columns,
      condition: compiled.condition,
    });
    const scope = { tenant_id: tenantId, workspace_id: workspaceId };
    const [counts] = await session.allText<{
      matched_profiles: number;
      scanned_profiles: number;
      sample_ids: string[];
    }>(statement, {
      ...scope,
      ...compiled.params,
      scan_limit: PREVIEW_SCAN_LIMIT,
      sample_size: sampleSize,
    });
    const totals = (await session.one<{
      workspace_profiles: number;
      workspace_identified_profiles: number;
    }>('workspace_profile_totals', scope)) as {
      workspace_profiles: number;
      workspace_identified_profiles: number;
    };
    const matched = counts?.matched_profiles ?? 0;
    const scanned = counts?.scanned_profiles ?? 0;
    const result: PreviewResult = {
      workspace_id: workspaceId,
      matched_profiles: matched,
      scanned_profiles: scanned,
      truncated: totals.workspace_profiles > scanned,
      workspace_profiles: totals.workspace_profiles,
      workspace_identified_profiles: totals.workspace_identified_profiles,
    };
    if (sampleSize === 0) return result;
    const sample = await profileContacts(
      context,
      session,
      { tenantId, workspaceId },
      counts?.sample_ids ?? [],
    );
    return { ...result, sample };
  });
}
