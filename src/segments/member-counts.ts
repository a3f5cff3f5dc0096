import { z } from 'zod';
import type { Context } from '../context.js';
import { requireSegment, type SegmentKey } from './definitions.js';

/** Points of a segment's member count over time, at most (the newest are kept). */
export const MAX_MEMBER_COUNT_POINTS = 500;

export const memberCountPointSchema = z.object({
  /** When an evaluation changed the membership (one point per batch or full evaluation). */
  at: z.string(),
  member_count: z.number(),
  /** Entries less exits at that moment. */
  change: z.number(),
});

export type MemberCountPoint = z.infer<typeof memberCountPointSchema>;

export const memberCountsSchema = z.object({
  /** Now, as the segment list counts it. */
  member_count: z.number(),
  /** Of them, those whose consent lacks a category the segment's webhooks need (withheld). */
  members_without_consent: z.number(),
  points: z.array(memberCountPointSchema),
});

export type MemberCounts = z.infer<typeof memberCountsSchema>;

/**
 * The member count now and after each change of a segment's membership, oldest first, from its
 * history (design §13): what the console charts.
 */
export async function segmentMemberCounts(
  context: Context,
  key: SegmentKey,
  limit = MAX_MEMBER_COUNT_POINTS,
): Promise<MemberCounts> {
  return context.store.read(async (session) => {
    await requireSegment(session, key);
    const params = {
      tenant_id: key.tenantId,
      workspace_id: key.workspaceId,
      segment_id: key.segmentId,
    };
    const now = await session.one<{ member_count: number }>('segment_member_count', params);
    const withheld = await session.one<{ members_without_consent: number }>(
      'segment_members_without_consent',
      params,
    );
    const rows = await session.all<{ at: string; member_count: number; delta: number }>(
      'segment_member_counts',
      { ...params, limit },
    );
    return {
      member_count: Number(now?.member_count ?? 0),
      members_without_consent: Number(withheld?.members_without_consent ?? 0),
      points: rows.reverse().map((row) => ({
        at: row.at,
        member_count: Number(row.member_count),
        change: Number(row.delta),
      })),
    };
  });
}
