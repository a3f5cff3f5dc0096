import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { decodeCursor, type Page, segmentCursorSchema, toPage } from '../store/cursor.js';
import type { Session } from '../store/session.js';
import { requireRoom } from '../tenancy/quotas.js';
import { findWorkspace, requireWorkspace } from '../tenancy/workspaces.js';
import { computeBehavioursFor, releaseBehavioursOf } from './behaviour-metrics.js';
import { parseRule } from './parse-rule.js';
import { behavioursIn } from './predicate.js';

export const SEGMENT_STATUSES = ['draft', 'active', 'paused', 'archived'] as const;
export type SegmentStatus = (typeof SEGMENT_STATUSES)[number];

export const automationsSchema = z.object({
  on_enter: z.boolean(),
  on_exit: z.boolean(),
  on_backfill: z.boolean(),
});

export type Automations = z.infer<typeof automationsSchema>;

export const DEFAULT_AUTOMATIONS: Automations = {
  on_enter: true,
  on_exit: true,
  on_backfill: false,
};

export const segmentSchema = z.object({
  segment_id: z.string(),
  workspace_id: z.string(),
  display_name: z.string(),
  predicate: z.unknown(),
  status: z.enum(SEGMENT_STATUSES),
  automations: automationsSchema,
  created_at: z.string(),
  updated_at: z.string(),
  /** Why evaluation skips the segment (null when it is evaluated), until its status is set again. */
  evaluation_error: z.string().nullable(),
  evaluation_failed_at: z.string().nullable(),
  /** Consent categories its webhooks need: a delivery is withheld without them ("Consent"). */
  required_consent: z.array(z.string()),
});

export type Segment = z.infer<typeof segmentSchema>;

export const segmentListItemSchema = segmentSchema.extend({ member_count: z.number() });

export type SegmentListItem = z.infer<typeof segmentListItemSchema>;

interface SegmentRow extends Automations {
  segment_id: string;
  workspace_id: string;
  display_name: string;
  predicate: string;
  status: SegmentStatus;
  created_at: string;
  updated_at: string;
  evaluation_error: string | null;
  evaluation_failed_at: string | null;
  required_consent: string[];
}

function toSegment(row: SegmentRow): Segment {
  return {
    segment_id: row.segment_id,
    workspace_id: row.workspace_id,
    display_name: row.display_name,
    predicate: JSON.parse(row.predicate),
    status: row.status,
    automations: { on_enter: row.on_enter, on_exit: row.on_exit, on_backfill: row.on_backfill },
    created_at: row.created_at,
    updated_at: row.updated_at,
    evaluation_error: row.evaluation_error,
    evaluation_failed_at: row.evaluation_failed_at,
    required_consent: row.required_consent,
  };
}

export interface SegmentKey {
  tenantId: string;
  workspaceId: string;
  segmentId: string;
}

function keyParams(key: SegmentKey) {
  return { tenant_id: key.tenantId, workspace_id: key.workspaceId, segment_id: key.segmentId };
}

async function findSegment(session: Session, key: SegmentKey): Promise<Segment | null> {
  const row = await session.one<SegmentRow>('get_segment', keyParams(key));
  return row && toSegment(row);
}

export async function requireSegment(session: Session, key: SegmentKey): Promise<Segment> {
  await requireWorkspace(session, key.tenantId, key.workspaceId);
  const segment = await findSegment(session, key);
  if (!segment)
    throw new NotFoundError(
      `segment ${key.segmentId} does not exist in workspace ${key.workspaceId}`,
    );
  return segment;
}

export interface SegmentInput {
  display_name: string;
  predicate: unknown;
  status: SegmentStatus;
  automations: Automations;
  required_consent?: string[];
}

/** Create-only: the predicate is checked against the metrics the workspace can see. */
export async function createSegment(
  context: Context,
  key: SegmentKey,
  input: SegmentInput,
): Promise<Segment> {
  return context.store.write(async (session) => {
    const workspace = await findWorkspace(session, key.tenantId, key.workspaceId);
    if (!workspace) {
      throw ValidationError.field('workspace_id', `workspace ${key.workspaceId} does not exist`);
    }
    const requiredConsent = [...new Set(input.required_consent ?? [])];
    for (const [index, category] of requiredConsent.entries())
      if (!workspace.consent_categories.includes(category))
        throw ValidationError.field(
          `required_consent[${index}]`,
          `workspace ${key.workspaceId} names no consent category ${category}; name it in its consent_categories first`,
        );
    const predicate = await parseRule(session, input.predicate, key.tenantId, key.workspaceId);
    if (await findSegment(session, key)) {
      throw new ConflictError(
        `segment ${key.segmentId} already exists in workspace ${key.workspaceId}`,
      );
    }
    await requireRoom(session, context.config, key.tenantId, 'segments');
    await session.run('insert_segment', {
      ...keyParams(key),
      display_name: input.display_name,
      predicate: JSON.stringify(input.predicate),
      required_consent: JSON.stringify(requiredConsent),
      status: input.status,
      ...input.automations,
      now: nowIso(context),
    });
    await computeBehavioursFor(session, key, behavioursIn(predicate), nowIso(context));
    return (await findSegment(session, key)) as Segment;
  });
}

export async function getSegment(context: Context, key: SegmentKey): Promise<Segment> {
  return context.store.read((session) => requireSegment(session, key));
}

export async function listSegments(
  context: Context,
  tenantId: string,
  query: { workspaceId: string | null; limit: number; cursor: string | null },
): Promise<Page<SegmentListItem>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, segmentCursorSchema);
  return context.store.read(async (session) => {
    if (query.workspaceId !== null) await requireWorkspace(session, tenantId, query.workspaceId);
    const rows = await session.all<SegmentRow & { member_count: number }>('list_segments_page', {
      tenant_id: tenantId,
      workspace_id: query.workspaceId,
      after_workspace: after?.w ?? null,
      after_segment: after?.s ?? null,
      limit: query.limit + 1,
    });
    return toPage(
      rows,
      query.limit,
      (row) => ({ w: row.workspace_id, s: row.segment_id }),
      (row) => ({ ...toSegment(row), member_count: row.member_count }),
    );
  });
}

export async function setSegmentStatus(
  context: Context,
  key: SegmentKey,
  status: SegmentStatus,
): Promise<Segment> {
  return context.store.write(async (session) => {
    await requireSegment(session, key);
    await session.run('update_segment_status', { ...keyParams(key), status, now: nowIso(context) });
    return (await findSegment(session, key)) as Segment;
  });
}

/**
 * Deletes the definition with its memberships, history and undelivered webhooks, and what was
 * computed for its behaviours alone: delete is for mistakes, `archived` is the way to retire a
 * segment.
 */
export async function deleteSegment(context: Context, key: SegmentKey): Promise<void> {
  await context.store.write(async (session) => {
    await requireSegment(session, key);
    await session.run('delete_segment_members', keyParams(key));
    await session.run('delete_segment_history', keyParams(key));
    await session.run('cancel_segment_webhooks', keyParams(key));
    await session.run('delete_segment', keyParams(key));
    await releaseBehavioursOf(session, key);
  });
}
