import { z } from 'zod';
import type { Context } from '../context.js';
import { decodeCursor, type Page, toPage } from '../store/cursor.js';
import { requireWorkspace } from '../tenancy/workspaces.js';
import { type ErasedCounts, erasedCountsSchema } from './erase.js';

/** An erasure as the audit log keeps it: who, when, what, when it was purged; no identifier. */
export const erasureRecordSchema = z.object({
  erasure_id: z.string(),
  workspace_id: z.string(),
  profile_id: z.string(),
  /** The token id of the caller, or `operator`. */
  actor: z.string(),
  erased_at: z.string(),
  /** When the database file was rewritten without the erased rows; null until then. */
  purged_at: z.string().nullable(),
  /**
   * Cluster mode: when the last copy of the profile's events leaves the events stream (the
   * erasure's time plus the stream's max age), after which no byte of them is on any node. Null
   * in the embedded default, which has no stream.
   */
  stream_copies_expire_at: z.string().nullable(),
  erased: erasedCountsSchema,
});

export type ErasureRecord = z.infer<typeof erasureRecordSchema>;

type AuditRow = Omit<ErasureRecord, 'erased'> & ErasedCounts;

// `a` is bound as a TIMESTAMP: a cursor whose time is no time is refused like any foreign cursor.
const erasureCursorSchema = z.object({ a: z.iso.datetime(), i: z.string() });

/** The tenant's erasures, newest first, of one workspace or all. */
export async function listErasures(
  context: Context,
  tenantId: string,
  query: { workspaceId: string | null; limit: number; cursor: string | null },
): Promise<Page<ErasureRecord>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, erasureCursorSchema);
  return context.store.read(async (session) => {
    if (query.workspaceId !== null) await requireWorkspace(session, tenantId, query.workspaceId);
    const rows = await session.all<AuditRow>('erasure_audit_page', {
      tenant_id: tenantId,
      workspace_id: query.workspaceId,
      after_at: after?.a ?? null,
      after_id: after?.i ?? null,
      limit: query.limit + 1,
    });
    return toPage(
      rows,
      query.limit,
      (row) => ({ a: row.erased_at, i: row.erasure_id }),
      ({
        profiles,
        identifiers,
        metrics,
        segment_memberships,
        history_entries,
        events,
        ...row
      }) => ({
        ...row,
        erased: { profiles, identifiers, metrics, segment_memberships, history_entries, events },
      }),
    );
  });
}
