import { z } from 'zod';

/** Categories a workspace names (each is read from every event that carries a choice). */
export const MAX_CONSENT_CATEGORIES = 20;

/**
 * A consent category as a consent manager names it (`Advertising`, `analytics`, `C0004`): a
 * letter or digit first, then letters, digits, spaces, `_`, `-` and `.`, at most 64.
 */
export const consentCategorySchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/,
    'must be a category name: a letter or digit, then letters, digits, spaces, _, - or ., at most 64',
  );

/** Choices read from one event at most; a longer list keeps its first. */
const MAX_CHOICES = 50;

const CATEGORY = /^[A-Za-z0-9][A-Za-z0-9 _.-]{0,63}$/;

/**
 * The consent an event carries, as `properties.consent` holds it in an envelope (design: a map of
 * category to granted), from the shapes the libraries send: Segment's
 * `context.consent.categoryPreferences` (`{"Advertising": true}`) and RudderStack's
 * `context.consentManagement` (`allowedConsentIds`, `deniedConsentIds`). Entries that are not a
 * category name with a boolean are left out; null when nothing is left.
 */
export function consentOfContext(context: unknown): Map<string, boolean> | null {
  if (typeof context !== 'object' || context === null) return null;
  const choices = new Map<string, boolean>();
  const record = context as Record<string, unknown>;
  const segment = (record.consent as Record<string, unknown> | undefined)?.categoryPreferences;
  if (typeof segment === 'object' && segment !== null && !Array.isArray(segment)) {
    for (const [category, granted] of Object.entries(segment))
      if (typeof granted === 'boolean' && CATEGORY.test(category)) choices.set(category, granted);
  }
  const rudder = record.consentManagement as Record<string, unknown> | undefined;
  if (typeof rudder === 'object' && rudder !== null) {
    for (const [key, granted] of [
      ['allowedConsentIds', true],
      ['deniedConsentIds', false],
    ] as const) {
      const ids = rudder[key];
      if (Array.isArray(ids))
        for (const id of ids)
          if (typeof id === 'string' && CATEGORY.test(id)) choices.set(id, granted);
    }
  }
  if (choices.size === 0) return null;
  return new Map([...choices].slice(0, MAX_CHOICES));
}
