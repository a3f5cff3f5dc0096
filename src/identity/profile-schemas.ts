import { z } from 'zod';

/** What a profile, the customer table and the history answer (design §7); their types follow. */
export const metricValueSchema = z.union([z.number(), z.string(), z.array(z.string()), z.null()]);

export const identifierViewSchema = z.object({
  type: z.string(),
  tier: z.string(),
  value: z.string().nullable(),
  masked_value: z.string(),
  key: z.string(),
  status: z.literal('active'),
});

export const consentChoiceSchema = z.object({
  category: z.string(),
  granted: z.boolean(),
  chosen_at: z.string(),
  event_id: z.string(),
  source: z.string(),
});

export type ConsentChoice = z.infer<typeof consentChoiceSchema>;

export const profileViewSchema = z.object({
  profile_id: z.string(),
  workspace_id: z.string(),
  created_at: z.string(),
  last_seen_at: z.string(),
  /** Set when the id asked for was merged away: this view is of the profile it went into. */
  merged_into: z.string().nullable(),
  identifiers: z.array(identifierViewSchema),
  metrics: z.record(z.string(), metricValueSchema),
  segments: z.array(z.object({ segment_id: z.string(), entered_at: z.string() })),
  merged_profile_ids: z.array(z.string()),
  /**
   * Each consent category's newest choice (the ledger, docs/decisions.md "Consent"); a category
   * of the workspace with none takes the workspace's `consent_default`.
   */
  consent: z.array(consentChoiceSchema),
});

/** A row of the customer table and of segment member lists. */
export const summaryRowSchema = z.object({
  profile_id: z.string(),
  email: z.string().nullable(),
  phone: z.string().nullable(),
  last_seen_at: z.string(),
  metrics: z.record(z.string(), metricValueSchema),
  segment_ids: z.array(z.string()),
});

export const historyEntrySchema = z.object({
  at: z.string(),
  kind: z.enum(['event', 'merge', 'segment_enter', 'segment_exit']),
  event_id: z.string().optional(),
  event_name: z.string().optional(),
  /** An event's properties, emails masked (its identifiers left them at ingest). */
  properties: z.record(z.string(), z.unknown()).optional(),
  merged_profile_id: z.string().optional(),
  segment_id: z.string().optional(),
});

export type MetricValue = z.infer<typeof metricValueSchema>;
export type IdentifierView = z.infer<typeof identifierViewSchema>;
export type ProfileView = z.infer<typeof profileViewSchema>;
export type SummaryRow = z.infer<typeof summaryRowSchema>;
export type HistoryEntry = z.infer<typeof historyEntrySchema>;
export type HistoryKind = HistoryEntry['kind'];
