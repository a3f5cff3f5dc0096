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

const timestamp = z.string();

export const placeholdersResponse = z.object({
  values: z.record(z.string(), z.array(z.string())),
  built_in: z.record(z.string(), z.array(z.string())),
});

export const metricDefinitionResponse = z.object({
  workspace_id: z.string(),
  metric_name: z.string(),
  event_name: z.string(),
  value_kind: z.string(),
  value_path: z.string().nullable(),
  display_name: z.string().nullable(),
  description: z.string().nullable(),
  window_days: z.number().nullable(),
  aggregation: z.string().nullable(),
  keep: z.number().nullable(),
  created_at: timestamp,
});

export const automationsSchema = z.object({
  on_enter: z.boolean(),
  on_exit: z.boolean(),
  on_backfill: z.boolean(),
});

export const segmentResponse = z.object({
  segment_id: z.string(),
  workspace_id: z.string(),
  display_name: z.string(),
  predicate: z.unknown(),
  status: z.enum(['draft', 'active', 'paused', 'archived']),
  automations: automationsSchema,
  created_at: timestamp,
  updated_at: timestamp,
  evaluation_error: z.string().nullable(),
  evaluation_failed_at: timestamp.nullable(),
});

export const segmentListItemResponse = segmentResponse.extend({ member_count: z.number() });

export const noContent = z.null();

/** A body that may be left out: Fastify hands a missing body over as null. */
export function optionalBody<T extends z.ZodType>(schema: T) {
  return z.preprocess((body) => body ?? {}, schema);
}

export const webhookResponse = z.object({
  webhook_id: z.string(),
  tenant_id: z.string(),
  workspace_id: z.string(),
  segment_id: z.string(),
  profile_id: z.string(),
  type: z.string(),
  backfill: z.boolean(),
  status: z.string(),
  attempts: z.number(),
  created_at: z.string(),
  first_attempt_at: z.string().nullable(),
  last_attempt_at: z.string().nullable(),
  next_attempt_at: z.string().nullable(),
  delivered_at: z.string().nullable(),
  last_error: z.string().nullable(),
});
