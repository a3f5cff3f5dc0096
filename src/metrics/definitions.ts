import { z } from 'zod';
import { findEventType } from '../catalog/event-types.js';
import { type Context, nowIso } from '../context.js';
import { ConflictError, NotFoundError, ValidationError } from '../errors.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';
import { requireRoom } from '../tenancy/quotas.js';
import { findWorkspace } from '../tenancy/workspaces.js';
import { AGGREGATIONS, type MetricDefinitionInput, VALUE_KINDS } from './definition-schema.js';
import { conditionsOf } from './event-filter.js';
import { freezeDefinition, metricTime } from './materialize.js';

/** A stored definition as the API lists it; unset optional fields are null (interface.md). */
export const metricDefinitionSchema = z.object({
  workspace_id: z.string(),
  metric_name: z.string(),
  event_name: z.string(),
  value_kind: z.enum(VALUE_KINDS),
  value_path: z.string().nullable(),
  display_name: z.string().nullable(),
  description: z.string().nullable(),
  window_days: z.number().nullable(),
  aggregation: z.enum(AGGREGATIONS).nullable(),
  keep: z.number().nullable(),
  created_at: z.string(),
  /** The conditions each event must meet: only on definitions computed for segments. */
  where: z.array(z.object({ path: z.string(), op: z.string(), value: z.unknown() })).nullable(),
  /** The segments a definition was created for (their behaviours); null for the catalog's own. */
  computed_for_segments: z.array(z.string()).nullable(),
});

export type MetricDefinition = z.infer<typeof metricDefinitionSchema>;

type MetricDefinitionRow = Omit<MetricDefinition, 'where'> & { event_filter: string | null };

/**
 * Creates a definition. Rules that need the store are checked here: the event type exists, the
 * workspace exists, and a metric name keeps one kind (and one aggregation) across definitions,
 * because definitions sharing a name combine into one value.
 */
export async function createMetricDefinition(
  context: Context,
  tenantId: string,
  input: MetricDefinitionInput,
): Promise<{ tenant_id: string; metric_name: string; status: 'created' }> {
  return context.store.write(async (session) => {
    if (!(await findEventType(session, tenantId, input.event_name))) {
      throw ValidationError.field('event_name', `event type ${input.event_name} is not registered`);
    }
    if (
      input.workspace_id !== '*' &&
      !(await findWorkspace(session, tenantId, input.workspace_id))
    ) {
      throw ValidationError.field('workspace_id', `workspace ${input.workspace_id} does not exist`);
    }
    const key = {
      tenant_id: tenantId,
      workspace_scope: input.workspace_id,
      metric_name: input.metric_name,
      event_name: input.event_name,
    };
    const siblings = await session.all<{ value_kind: string; aggregation: string | null }>(
      'metric_definitions_named',
      {
        tenant_id: tenantId,
        metric_name: input.metric_name,
      },
    );
    const other = siblings.find((row) => row.value_kind !== input.value_kind);
    if (other) {
      throw ValidationError.field(
        'value_kind',
        `metric ${input.metric_name} is already defined with value_kind ${other.value_kind}`,
      );
    }
    const otherAggregation = siblings.find((row) => row.aggregation !== input.aggregation);
    if (otherAggregation) {
      throw ValidationError.field(
        'aggregation',
        `metric ${input.metric_name} is already defined with aggregation ${otherAggregation.aggregation}`,
      );
    }
    if (siblings.length === 0) {
      const name = { tenant_id: tenantId, metric_name: input.metric_name };
      await session.run('metrics_discard_frozen', name);
      await session.run('metrics_discard_frozen_strings', name);
      await session.run('metrics_discard_vector_entries', name);
    }
    if (await session.one('get_metric_definition', key)) {
      throw new ConflictError(
        `metric ${input.metric_name} on event ${input.event_name} is already defined for workspace ${input.workspace_id}`,
      );
    }
    await requireRoom(session, context.config, tenantId, 'metric_definitions');
    await session.run('insert_metric_definition', {
      ...key,
      value_kind: input.value_kind,
      value_path: input.value_path,
      aggregation: input.aggregation,
      keep: input.keep,
      window_days: input.window_days,
      display_name: input.display_name,
      description: input.description,
      now: nowIso(context),
    });
    return { tenant_id: tenantId, metric_name: input.metric_name, status: 'created' as const };
  });
}

const definitionCursor = z.strictObject({ m: z.string(), e: z.string(), w: z.string() });

/** Every definition of the tenant, or with `workspaceId` only those that apply to that workspace. */
export async function listMetricDefinitions(
  context: Context,
  tenantId: string,
  workspaceId: string | null,
  query: PageQuery,
): Promise<Page<MetricDefinition>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, definitionCursor);
  const rows = await context.store.read((session) =>
    session.all<MetricDefinitionRow>('list_metric_definitions_page', {
      tenant_id: tenantId,
      workspace_id: workspaceId,
      after_metric: after?.m ?? null,
      after_event: after?.e ?? null,
      after_scope: after?.w ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ m: row.metric_name, e: row.event_name, w: row.workspace_id }),
    ({ event_filter, ...row }) => ({ ...row, where: conditionsOf(event_filter) }),
  );
}

export async function deleteMetricDefinition(
  context: Context,
  tenantId: string,
  key: { metricName: string; eventName: string; workspaceScope: string },
): Promise<void> {
  await context.store.write(async (session) => {
    const params = {
      tenant_id: tenantId,
      workspace_scope: key.workspaceScope,
      metric_name: key.metricName,
      event_name: key.eventName,
    };
    const found = await session.one<{ for_segments: boolean }>('get_metric_definition', params);
    if (found?.for_segments) {
      const segments = await session.all<{ segment_id: string }>('segments_computing_behaviour', {
        tenant_id: tenantId,
        workspace_id: key.workspaceScope,
        metric_name: key.metricName,
      });
      throw new ConflictError(
        `metric ${key.metricName} is computed for the behaviours of segments ${segments.map((row) => row.segment_id).join(', ')}; it goes when they are deleted`,
        { segments },
      );
    }
    const deleted = await session.run('delete_metric_definition', params);
    if (deleted === 0) {
      throw new NotFoundError(
        `no metric ${key.metricName} on event ${key.eventName} for workspace ${key.workspaceScope}`,
      );
    }
    await freezeDefinition(session, { tenantId, ...key }, metricTime(nowIso(context)));
  });
}
