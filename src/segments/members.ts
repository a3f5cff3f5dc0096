import type { Context } from '../context.js';
import type { SummaryRow } from '../identity/profile-schemas.js';
import { profileSummary } from '../identity/profile-view.js';
import type { Page } from '../store/cursor.js';
import { getSegment, type SegmentKey } from './definitions.js';

/** A segment's members as rows of the customer table, masked the same way (design §7, §11). */
export async function segmentMembers(
  context: Context,
  key: SegmentKey,
  paging: { limit: number; cursor: string | null },
): Promise<Page<SummaryRow>> {
  await getSegment(context, key);
  return profileSummary(
    context,
    { tenantId: key.tenantId, workspaceId: key.workspaceId },
    { ...paging, segmentId: key.segmentId, order: null },
  );
}
