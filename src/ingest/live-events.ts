import { z } from 'zod';
import type { Context } from '../context.js';
import { maskEmailsIn } from '../identity/mask.js';
import { decodeCursor, encodeCursor, type Page } from '../store/cursor.js';
import { requireWorkspace } from '../tenancy/workspaces.js';

export const LINE_OUTCOMES = ['stored', 'duplicate', 'rejected', 'quarantined'] as const;
/**
 * Where a line came from: the browser or server routes, or the Segment tracking API (a server
 * line whose `intake` names it, src/landing-format.ts).
 */
export const LINE_SOURCES = ['browser', 'server', 'segment_api'] as const;

/** One line of the live view, as the route and the stream answer it. */
export const liveEventSchema = z.object({
  event_id: z.string().nullable(),
  name: z.string().nullable(),
  occured_at: z.string().nullable(),
  received_at: z.string().nullable(),
  /** Null for a line too broken to say (rejected as unparsable_line). */
  source: z.enum(LINE_SOURCES).nullable(),
  outcome: z.enum(LINE_OUTCOMES),
  /** Why a line was rejected or quarantined; null otherwise. */
  reason: z.string().nullable(),
  /** Stored: its profile; duplicate: the profile its first copy went to, if known. */
  profile_id: z.string().nullable(),
  /** The profile's first email, always masked: who the line is about. */
  email: z.string().nullable(),
  /** Identifier values masked; null for lines not stored (they may hold values of any kind). */
  properties: z.record(z.string(), z.unknown()).nullable(),
});

export type LiveEvent = z.infer<typeof liveEventSchema>;

export interface LiveEventFilters {
  name?: string | undefined;
  profileId?: string | undefined;
  outcome?: (typeof LINE_OUTCOMES)[number] | undefined;
  source?: (typeof LINE_SOURCES)[number] | undefined;
}

export interface LiveScope {
  tenantId: string;
  workspaceId: string;
}

interface LiveRow {
  seq: number;
  event_id: string | null;
  event_name: string | null;
  occured_at: string | null;
  received_at: string | null;
  source: LiveEvent['source'];
  outcome: LiveEvent['outcome'];
  reason: string | null;
  profile_id: string | null;
  properties: string | null;
  email: string | null;
}

const liveCursorSchema = z.object({ q: z.string().regex(/^\d{1,15}$/) });

/** The cursor that resumes after (stream) or below (page) a row: what `id:` and `next_cursor` hold. */
export function liveCursor(seq: number): string {
  return encodeCursor({ q: String(seq) });
}

export function seqOfCursor(cursor: string): number {
  return Number(decodeCursor(cursor, liveCursorSchema).q);
}

function liveEvent(row: LiveRow): LiveEvent {
  return {
    event_id: row.event_id,
    name: row.event_name,
    occured_at: row.occured_at,
    received_at: row.received_at,
    source: row.source,
    outcome: row.outcome,
    reason: row.reason,
    profile_id: row.profile_id,
    email: row.email,
    properties:
      row.properties === null
        ? null
        : (maskEmailsIn(JSON.parse(row.properties)) as Record<string, unknown>),
  };
}

interface Window {
  /** Rows below this seq, newest first (a page). */
  before?: number;
  /** Rows above this seq, oldest first (a stream catching up). */
  after?: number;
  limit: number;
}

async function readRows(
  context: Context,
  scope: LiveScope,
  filters: LiveEventFilters,
  window: Window,
): Promise<{ rows: LiveRow[]; newest: number }> {
  return context.store.read(async (session) => {
    await requireWorkspace(session, scope.tenantId, scope.workspaceId);
    // Read in the same snapshot as the rows: a stream resumed from it misses no line between.
    const newest = (await session.one<{ last_seq: number }>('live_events_last_seq'))?.last_seq ?? 0;
    const rows = await session.all<LiveRow>('live_events_page', {
      tenant_id: scope.tenantId,
      workspace_id: scope.workspaceId,
      before: window.before ?? null,
      after: window.after ?? null,
      event_name: filters.name ?? null,
      outcome: filters.outcome ?? null,
      source: filters.source ?? null,
      profile_id: filters.profileId ?? null,
      limit: window.limit,
    });
    return { rows, newest };
  });
}

export interface LiveEventsPage extends Page<LiveEvent> {
  /**
   * On the first page: the `Last-Event-ID` that opens the stream right after this page, so the
   * lines committed in between are not lost; null on later pages.
   */
  stream_cursor: string | null;
}

/** A page of the workspace's recent lines, newest first. */
export async function liveEventsPage(
  context: Context,
  scope: LiveScope,
  filters: LiveEventFilters,
  page: { limit: number; cursor: string | null },
): Promise<LiveEventsPage> {
  const before = page.cursor === null ? undefined : seqOfCursor(page.cursor);
  const { rows, newest } = await readRows(context, scope, filters, {
    ...(before === undefined ? {} : { before }),
    limit: page.limit + 1,
  });
  const items = rows.slice(0, page.limit);
  const last = items.at(-1);
  return {
    items: items.map(liveEvent),
    next_cursor: rows.length > page.limit && last !== undefined ? liveCursor(last.seq) : null,
    stream_cursor: before === undefined ? liveCursor(newest) : null,
  };
}

export interface LiveEventAfter {
  seq: number;
  event: LiveEvent;
}

/** The lines after `after`, oldest first: what a stream sends next. */
export async function liveEventsAfter(
  context: Context,
  scope: LiveScope,
  filters: LiveEventFilters,
  after: number,
  limit: number,
): Promise<LiveEventAfter[]> {
  const { rows } = await readRows(context, scope, filters, { after, limit });
  return rows.map((row) => ({ seq: row.seq, event: liveEvent(row) }));
}

/** The newest seq the database holds: a stream without `Last-Event-ID` starts after it. */
export async function newestLiveSeq(context: Context): Promise<number> {
  const row = await context.store.read((session) =>
    session.one<{ last_seq: number }>('live_events_last_seq'),
  );
  return row?.last_seq ?? 0;
}
