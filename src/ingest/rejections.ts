import { z } from 'zod';
import type { Context } from '../context.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';

/** A line ingest refused (design §9), as a tenant may see it: what and why, never what it held. */
export interface Rejection {
  event_id: string | null;
  event_name: string | null;
  workspace_id: string;
  reason: string;
  received_at: string | null;
  rejected_at: string;
}

interface RejectionRow extends Rejection {
  /** The landing file: only the cursor's, never shown (its path is the collector's business). */
  file: string;
}

const rejectionCursor = z.strictObject({
  a: z.iso.datetime(),
  f: z.string(),
  i: z.string(),
  r: z.string(),
});

export async function listRejections(
  context: Context,
  scope: { tenantId: string; workspaceId: string },
  query: PageQuery,
): Promise<Page<Rejection>> {
  const before = query.cursor === null ? null : decodeCursor(query.cursor, rejectionCursor);
  const rows = await context.store.read((session) =>
    session.all<RejectionRow>('list_rejections_page', {
      tenant_id: scope.tenantId,
      workspace_id: scope.workspaceId,
      before_at: before?.a ?? null,
      before_file: before?.f ?? null,
      before_id: before?.i ?? null,
      before_reason: before?.r ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ a: row.rejected_at, f: row.file, i: row.event_id ?? '', r: row.reason }),
    ({ file: _file, ...row }) => ({ ...row, event_id: row.event_id === '' ? null : row.event_id }),
  );
}
