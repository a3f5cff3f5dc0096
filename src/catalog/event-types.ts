import { z } from 'zod';
import { type Context, nowIso } from '../context.js';
import { ConflictError, NotFoundError } from '../errors.js';
import { decodeCursor, type Page, type PageQuery, toPage } from '../store/cursor.js';
import type { Session } from '../store/session.js';
import { requireRoom } from '../tenancy/quotas.js';

export const eventTypeSchema = z.object({
  event_name: z.string(),
  dedup_entity: z.string().nullable(),
  dedup_key_paths: z.array(z.string()).nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});

export type EventType = z.infer<typeof eventTypeSchema>;

export interface DedupSettings {
  dedupEntity: string;
  dedupKeyPaths: string[];
}

export async function findEventType(
  session: Session,
  tenantId: string,
  eventName: string,
): Promise<EventType | null> {
  return session.one<EventType>('get_event_type', { tenant_id: tenantId, event_name: eventName });
}

/** Registers or updates an event type; without dedup settings its events dedup by `id`. */
export async function putEventType(
  context: Context,
  tenantId: string,
  eventName: string,
  dedup: DedupSettings | null,
): Promise<{ eventType: EventType; created: boolean }> {
  return context.store.write(async (session) => {
    const existing = await findEventType(session, tenantId, eventName);
    if (!existing) await requireRoom(session, context.config, tenantId, 'event_types');
    await session.run(existing ? 'update_event_type' : 'insert_event_type', {
      tenant_id: tenantId,
      event_name: eventName,
      dedup_entity: dedup?.dedupEntity ?? null,
      dedup_key_paths: dedup ? JSON.stringify(dedup.dedupKeyPaths) : null,
      now: nowIso(context),
    });
    return {
      eventType: (await findEventType(session, tenantId, eventName)) as EventType,
      created: !existing,
    };
  });
}

const eventTypeCursor = z.strictObject({ e: z.string() });

export async function listEventTypes(
  context: Context,
  tenantId: string,
  query: PageQuery,
): Promise<Page<EventType>> {
  const after = query.cursor === null ? null : decodeCursor(query.cursor, eventTypeCursor);
  const rows = await context.store.read((session) =>
    session.all<EventType>('list_event_types_page', {
      tenant_id: tenantId,
      after_event: after?.e ?? null,
      limit: query.limit + 1,
    }),
  );
  return toPage(
    rows,
    query.limit,
    (row) => ({ e: row.event_name }),
    (row) => row,
  );
}

/** Refuses while metric definitions still read the type: they would silently stop counting. */
/** A metric definition that reads an event type: the type cannot be deleted while it does. */
export interface EventTypeDependent {
  metric_name: string;
  workspace_id: string;
}

async function readDependents(
  session: Session,
  tenantId: string,
  eventName: string,
): Promise<EventTypeDependent[]> {
  if (!(await findEventType(session, tenantId, eventName))) {
    throw new NotFoundError(`event type ${eventName} is not registered`);
  }
  return session.all<EventTypeDependent>('metric_definitions_using_event', {
    tenant_id: tenantId,
    event_name: eventName,
  });
}

/** What a delete of the event type would meet: the metric definitions reading it. */
export async function eventTypeDependents(
  context: Context,
  tenantId: string,
  eventName: string,
): Promise<EventTypeDependent[]> {
  return context.store.read((session) => readDependents(session, tenantId, eventName));
}

export async function deleteEventType(
  context: Context,
  tenantId: string,
  eventName: string,
): Promise<void> {
  await context.store.write(async (session) => {
    const users = await readDependents(session, tenantId, eventName);
    if (users.length > 0) {
      const names = [...new Set(users.map((row) => row.metric_name))].join(', ');
      throw new ConflictError(
        `event type ${eventName} is used by metric definitions (${names}); delete them first`,
        { metric_definitions: users },
      );
    }
    await session.run('delete_event_type', { tenant_id: tenantId, event_name: eventName });
  });
}
