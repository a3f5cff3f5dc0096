import { z } from 'zod';
import { eventNameSchema, idSchema } from '../ids.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../store/cursor.js';

export const tenantParams = z.object({ tenant: idSchema });
export const workspaceParams = tenantParams.extend({ workspace: idSchema });
export const eventTypeParams = tenantParams.extend({ event_name: eventNameSchema });
export const segmentParams = tenantParams.extend({ segment_id: idSchema });

export const pagingQuery = z.object({
  limit: z.coerce.number().int().min(1).max(MAX_PAGE_SIZE).default(DEFAULT_PAGE_SIZE),
  cursor: z.string().min(1).optional(),
});

export const placeholdersResponse = z.object({
  values: z.record(z.string(), z.array(z.string())),
  built_in: z.record(z.string(), z.array(z.string())),
});

export const noContent = z.null();

/** `?dry_run=true`: a delete says what it would do, and does nothing. */
export const dryRunQuery = z.object({
  dry_run: z
    .enum(['true', 'false'], { error: 'must be true or false' })
    .default('false')
    .transform((value) => value === 'true'),
});

/** A body that may be left out: Fastify hands a missing body over as null. */
export function optionalBody<T extends z.ZodType>(schema: T) {
  return z.preprocess((body) => body ?? {}, schema);
}
