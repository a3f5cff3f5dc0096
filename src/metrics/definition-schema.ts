import { z } from 'zod';
import { eventNameSchema, idSchema, propertyPathSchema } from '../ids.js';

export const VALUE_KINDS = ['count', 'property_number', 'property_string'] as const;
export const AGGREGATIONS = ['latest', 'recent'] as const;
export const DEFAULT_KEEP = 5;

export const metricNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]{0,63}$/, 'must be lowercase and match ^[a-z][a-z0-9_]{0,63}$');

/**
 * A name as a delete addresses a definition: a catalog metric's, or that of a metric computed for
 * segments (`~` and 16 hex digits), whose delete is refused while they exist.
 */
export const definedMetricNameSchema = z.union([
  metricNameSchema,
  z.string().regex(/^~[0-9a-f]{16}$/),
]);

export const workspaceScopeSchema = z.union([z.literal('*'), idSchema]);

/** The body of `PUT /metric-definitions`, with every combination rule of the interface. */
export const metricDefinitionInputSchema = z
  .object({
    metric_name: metricNameSchema,
    event_name: eventNameSchema,
    value_kind: z.enum(VALUE_KINDS),
    value_path: propertyPathSchema.nullish(),
    aggregation: z.enum(AGGREGATIONS).nullish(),
    keep: z.number().int().min(1).max(10).nullish(),
    window_days: z.number().int().min(1).max(730).nullish(),
    workspace_id: workspaceScopeSchema.default('*'),
    display_name: z.string().max(200).nullish(),
    description: z.string().max(2000).nullish(),
  })
  .superRefine((input, ctx) => {
    const fault = (path: string, message: string) =>
      ctx.addIssue({ code: 'custom', path: [path], message });
    const property = input.value_kind !== 'count';
    if (property && input.value_path == null)
      fault('value_path', `is required for value_kind ${input.value_kind}`);
    if (!property && input.value_path != null)
      fault('value_path', 'is not allowed for value_kind count');
    if (input.value_kind === 'property_string') {
      if (input.aggregation == null)
        fault('aggregation', 'is required for value_kind property_string (latest or recent)');
      if (input.window_days != null)
        fault('window_days', 'is allowed only for value_kind count and property_number');
    } else if (input.aggregation != null) {
      fault('aggregation', 'is allowed only for value_kind property_string');
    }
    if (input.keep != null && input.aggregation !== 'recent')
      fault('keep', 'is allowed only with aggregation recent');
  })
  .transform((input) => ({
    ...input,
    value_path: input.value_path ?? null,
    aggregation: input.aggregation ?? null,
    keep: input.aggregation === 'recent' ? (input.keep ?? DEFAULT_KEEP) : null,
    window_days: input.window_days ?? null,
    display_name: input.display_name ?? null,
    description: input.description ?? null,
  }));

export type MetricDefinitionInput = z.output<typeof metricDefinitionInputSchema>;
