import { z } from 'zod';

/** Caller-chosen ids: tenants, workspaces, segments (design §6). */
export const idSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_-]{0,63}$/, 'must match ^[a-z0-9][a-z0-9_-]{0,63}$');

/** Event type names: lowercase, starting with a letter. */
export const eventNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9_]*$/, 'must be lowercase and match ^[a-z][a-z0-9_]*$')
  .max(128, 'must be at most 128 characters');

/** Where an event carries its identifiers; only ingest reads them, to seal them (design §15). */
export const IDENTIFIERS_PATH = 'properties.identifiers';

/** Whether a `properties.…` path is the identifiers object or leads into it. */
export function pointsIntoIdentifiers(path: string): boolean {
  return path === IDENTIFIERS_PATH || path.startsWith(`${IDENTIFIERS_PATH}.`);
}

/**
 * Paths into an event that a tenant sets (metric `value_path`, event type `dedup_key_paths`), as
 * the interface shows them: `properties.<field>`. None may read the identifiers: what it reads is
 * stored in plain text (a metric value, a dedup key) and shown to workspace tokens.
 */
export const propertyPathSchema = z
  .string()
  .regex(
    /^properties\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/,
    'must be of the form properties.<field>',
  )
  .refine((path) => !pointsIntoIdentifiers(path), {
    error: `may not point into ${IDENTIFIERS_PATH}: identifier values are stored sealed, never as metric values or dedup keys`,
  });
