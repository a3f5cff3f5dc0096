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

/** Paths into an event, as the interface shows them: `properties.<field>`. */
export const propertyPathSchema = z
  .string()
  .regex(
    /^properties\.[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/,
    'must be of the form properties.<field>',
  );
