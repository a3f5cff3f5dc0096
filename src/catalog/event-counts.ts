import { z } from 'zod';
import { type Context, nowIso } from '../context.js';

export const eventCountSchema = z.object({
  event_name: z.string(),
  last_24h: z.number(),
  last_7d: z.number(),
});

export type EventCount = z.infer<typeof eventCountSchema>;

/**
 * How many events of each name were stored in the last 24 hours and 7 days (the catalog's
 * "seen" columns), in one workspace or, with `workspaceId` null, the whole tenant. Names with no
 * event in 7 days are absent: the caller reads them as zero.
 */
export async function eventCounts(
  context: Context,
  tenantId: string,
  workspaceId: string | null,
): Promise<EventCount[]> {
  return context.store.read((session) =>
    session.all<EventCount>('event_counts_by_name', {
      tenant_id: tenantId,
      workspace_id: workspaceId,
      now: nowIso(context),
    }),
  );
}
