import { z } from 'zod';
import type { Context } from '../context.js';
import { NotFoundError } from '../errors.js';
import { decodeCursor, type Page, toPage } from '../store/cursor.js';
import type { Session } from '../store/session.js';
import { fillSlots, sql } from '../store/sql-files.js';
import { requireWorkspace } from '../tenancy/workspaces.js';
import type { TenantKeys } from '../tenant-keys.js';
import { maskEmailsIn } from './mask.js';
import { normalizeIdentifier } from './normalize.js';
import type {
  ConsentChoice,
  HistoryEntry,
  HistoryKind,
  MetricValue,
  ProfileView,
  SummaryRow,
} from './profile-schemas.js';

interface Scope {
  tenantId: string;
  workspaceId: string;
}

const scopeParams = (scope: Scope) => ({
  tenant_id: scope.tenantId,
  workspace_id: scope.workspaceId,
});

interface MetricRow {
  metric_name: string;
  number_value: number | null;
  string_value: string | null;
  list_value: string[] | null;
}

function metricsObject(rows: MetricRow[]): Record<string, MetricValue> {
  return Object.fromEntries(
    rows.map((row) => [
      row.metric_name,
      row.list_value ?? row.string_value ?? row.number_value ?? null,
    ]),
  );
}

/**
 * Masking (design §11): plain text only for the types the environment allows; otherwise the
 * masked form (customer table) or null (profile view, where masked_value sits beside it).
 */
class Reveal {
  constructor(
    private readonly keys: TenantKeys,
    private readonly plaintextTypes: readonly string[],
  ) {}

  value(type: string, ciphertext: Uint8Array | null): string | null {
    if (ciphertext === null || !this.plaintextTypes.includes(type)) return null;
    return this.keys.decrypt(ciphertext);
  }

  column(type: string, ciphertext: Uint8Array | null, masked: string | null): string | null {
    return this.value(type, ciphertext) ?? masked;
  }
}

function revealFor(context: Context, tenantId: string): Reveal {
  return new Reveal(context.keyRing.forTenant(tenantId), context.config.plaintext_identifier_types);
}

/** A profile's first email and phone, masked as the customer table masks them (design §11). */
export interface ProfileContact {
  profile_id: string;
  email: string | null;
  phone: string | null;
}

/** The contacts of `profileIds`, in their order, read in the caller's session. */
export async function profileContacts(
  context: Context,
  session: Session,
  scope: Scope,
  profileIds: string[],
): Promise<ProfileContact[]> {
  if (profileIds.length === 0) return [];
  const reveal = revealFor(context, scope.tenantId);
  const rows = await session.all<{
    profile_id: string;
    email_ciphertext: Uint8Array | null;
    email_masked: string | null;
    phone_ciphertext: Uint8Array | null;
    phone_masked: string | null;
  }>('profile_contacts', { ...scopeParams(scope), profile_ids: JSON.stringify(profileIds) });
  const byId = new Map(rows.map((row) => [row.profile_id, row]));
  return profileIds.flatMap((profileId) => {
    const row = byId.get(profileId);
    return row
      ? [
          {
            profile_id: profileId,
            email: reveal.column('email', row.email_ciphertext, row.email_masked),
            phone: reveal.column('phone', row.phone_ciphertext, row.phone_masked),
          },
        ]
      : [];
  });
}

async function liveProfile(session: Session, scope: Scope, profileId: string) {
  type Row = {
    profile_id: string;
    created_at: string;
    last_seen_at: string;
    merged_into: string | null;
  };
  const row = await session.one<Row>('get_profile', {
    ...scopeParams(scope),
    profile_id: profileId,
  });
  if (!row)
    throw new NotFoundError(
      `profile ${profileId} does not exist in workspace ${scope.workspaceId}`,
    );
  if (row.merged_into === null) return { row, mergedFrom: null };
  const survivor = await session.one<Row>('get_profile', {
    ...scopeParams(scope),
    profile_id: row.merged_into,
  });
  if (!survivor)
    throw new NotFoundError(
      `profile ${profileId} does not exist in workspace ${scope.workspaceId}`,
    );
  return { row: survivor, mergedFrom: profileId };
}

/** The live profile holding an email or phone, found by its keyed form. */
export async function lookupProfile(
  context: Context,
  scope: Scope,
  identifier: { type: 'email' | 'phone'; value: string },
): Promise<{ profile_id: string }> {
  const normalized = normalizeIdentifier(identifier.type, identifier.value);
  const notFound = new NotFoundError(
    `no profile with that ${identifier.type} in workspace ${scope.workspaceId}`,
  );
  if (normalized === null) throw notFound;
  const key = context.keyRing.forTenant(scope.tenantId).identifierKey(identifier.type, normalized);
  return context.store.read(async (session) => {
    await requireWorkspace(session, scope.tenantId, scope.workspaceId);
    const found = await session.one<{ profile_id: string }>('profile_by_identifier_key', {
      ...scopeParams(scope),
      identifier_key: key,
    });
    if (!found) throw notFound;
    const { row } = await liveProfile(session, scope, found.profile_id);
    return { profile_id: row.profile_id };
  });
}

export async function viewProfile(
  context: Context,
  scope: Scope,
  profileId: string,
): Promise<ProfileView> {
  const reveal = revealFor(context, scope.tenantId);
  return context.store.read(async (session) => {
    const { row, mergedFrom } = await liveProfile(session, scope, profileId);
    const params = { ...scopeParams(scope), profile_id: row.profile_id };
    const identifiers = await session.all<{
      type: string;
      tier: string;
      ciphertext: Uint8Array;
      masked_value: string;
      key: string;
    }>('identifiers_of_profile', params);
    const merged = await session.all<{ profile_id: string }>('profiles_merged_into', params);
    return {
      profile_id: row.profile_id,
      workspace_id: scope.workspaceId,
      created_at: row.created_at,
      last_seen_at: row.last_seen_at,
      merged_into: mergedFrom === null ? null : row.profile_id,
      identifiers: identifiers.map((identifier) => ({
        type: identifier.type,
        tier: identifier.tier,
        value: reveal.value(identifier.type, identifier.ciphertext),
        masked_value: identifier.masked_value,
        key: identifier.key,
        status: 'active' as const,
      })),
      metrics: metricsObject(await session.all<MetricRow>('metrics_of_profile', params)),
      segments: await session.all<{ segment_id: string; entered_at: string }>(
        'segments_of_profile',
        params,
      ),
      merged_profile_ids: merged.map((entry) => entry.profile_id),
      consent: await session.all<ConsentChoice>('consent_of_profile', params),
    };
  });
}

// `at` is bound as a TIMESTAMP: a cursor whose time is no time is refused like any foreign cursor.
const historyCursor = z.object({ at: z.iso.datetime(), kind: z.string(), ref: z.string() });

export async function profileHistory(
  context: Context,
  scope: Scope,
  profileId: string,
  query: { limit: number; cursor: string | null },
): Promise<Page<HistoryEntry>> {
  const before = query.cursor === null ? null : decodeCursor(query.cursor, historyCursor);
  return context.store.read(async (session) => {
    const { row } = await liveProfile(session, scope, profileId);
    type Row = {
      happened_at: string;
      kind: HistoryKind;
      ref: string;
      event_name: string | null;
      properties: string | null;
    };
    const rows = await session.all<Row>('profile_history_page', {
      ...scopeParams(scope),
      profile_id: row.profile_id,
      before_at: before?.at ?? null,
      before_kind: before?.kind ?? null,
      before_ref: before?.ref ?? null,
      limit: query.limit + 1,
    });
    return toPage(
      rows,
      query.limit,
      (entry) => ({ at: entry.happened_at, kind: entry.kind, ref: entry.ref }),
      (entry): HistoryEntry => {
        switch (entry.kind) {
          case 'event':
            return {
              at: entry.happened_at,
              kind: 'event',
              event_id: entry.ref,
              event_name: entry.event_name ?? '',
              properties: maskEmailsIn(JSON.parse(entry.properties ?? '{}')) as Record<
                string,
                unknown
              >,
            };
          case 'merge':
            return { at: entry.happened_at, kind: 'merge', merged_profile_id: entry.ref };
          default:
            return { at: entry.happened_at, kind: entry.kind, segment_id: entry.ref };
        }
      },
    );
  });
}

/** `v`: the metric value of the page's last row when sorted, `m`: that row had none. */
const summaryCursor = z.object({
  p: z.string(),
  v: z
    .string()
    .regex(/^-?\d+(\.\d+)?(e[+-]?\d+)?$/i)
    .optional(),
  m: z.literal('1').optional(),
});

/**
 * How the customer table is ordered: by profile id, or by a number metric (missing ones last),
 * which the caller checked is one (`requireNumberMetric`).
 */
export interface SummaryOrder {
  metric: string;
  descending: boolean;
}

/** The customer table: one row per live profile, email and phone masked per design §11. */
export async function profileSummary(
  context: Context,
  scope: Scope,
  query: {
    limit: number;
    cursor: string | null;
    segmentId: string | null;
    order: SummaryOrder | null;
  },
): Promise<Page<SummaryRow>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, summaryCursor);
  const reveal = revealFor(context, scope.tenantId);
  const { order } = query;
  return context.store.read(async (session) => {
    await requireWorkspace(session, scope.tenantId, scope.workspaceId);
    const statement = fillSlots(sql('profile_summary_rows'), {
      page: sql(order ? 'profile_summary_by_metric' : 'profile_summary_by_id'),
    });
    const rows = await session.allText<{
      profile_id: string;
      last_seen_at: string;
      email_ciphertext: Uint8Array | null;
      email_masked: string | null;
      phone_ciphertext: Uint8Array | null;
      phone_masked: string | null;
      metrics: MetricRow[] | null;
      segment_ids: string[] | null;
      sort_value: number | null;
    }>(statement, {
      ...scopeParams(scope),
      after: after?.p ?? null,
      segment_id: query.segmentId,
      limit: query.limit + 1,
      descending: order?.descending ?? false,
      ...(order
        ? {
            sort_metric: order.metric,
            after_value: after?.v === undefined ? null : Number(after.v),
            after_missing: after?.m === '1',
          }
        : {}),
    });
    return toPage(
      rows,
      query.limit,
      (row): Record<string, string> =>
        !order
          ? { p: row.profile_id }
          : row.sort_value === null
            ? { p: row.profile_id, m: '1' }
            : { p: row.profile_id, v: String(row.sort_value) },
      (row): SummaryRow => ({
        profile_id: row.profile_id,
        email: reveal.column('email', row.email_ciphertext, row.email_masked),
        phone: reveal.column('phone', row.phone_ciphertext, row.phone_masked),
        last_seen_at: row.last_seen_at,
        metrics: metricsObject(row.metrics ?? []),
        segment_ids: row.segment_ids ?? [],
      }),
    );
  });
}
