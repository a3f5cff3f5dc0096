import { parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { profileIdFor } from '../../src/identity/resolve.js';

/**
 * A reference model of ingest, written from design §9–§13 and docs/decisions.md, one event at a
 * time, for the stream property test to check the real ingest against. It is deliberately plain:
 * no sets, no SQL paths, only the rules.
 */

/** One generated event as the collector receives it. */
export interface StreamEvent {
  source: 'browser' | 'server';
  id: string;
  name: string;
  /** The `anon_id` value after `cookie:`; browser events always carry one. */
  anon?: string;
  /** Written in this order; a JSON object keeps it. */
  identifiers: [string, string][];
  properties: Record<string, unknown>;
  /** UTC, as ingest stores it (`…T09:00:00.000Z`). */
  occuredAt: string;
  /** Sent with the offset +05:30 instead of Z (the same instant). */
  indianOffset: boolean;
}

export interface ModelRules {
  tenantId: string;
  workspaceId: string;
  declaredTypes: readonly string[];
  maxPerProfile: ReadonlyMap<string, number>;
  /** The tenant's own placeholders by type (`*` for any), as sent to PUT /placeholders. */
  tenantPlaceholders: ReadonlyMap<string, readonly string[]>;
  /** Dedup key paths by event name (field names under `properties`); none means by id. */
  dedup: ReadonlyMap<string, { entity: string; fields: readonly string[] }>;
  /** Identifier key of a normalised value (HMAC; the test computes it with the tenant's keys). */
  keyOf(type: string, normalized: string): string;
}

export interface ModelProfile {
  profileId: string;
  createdAt: string;
  mergedInto: string | null;
  /** Identifier keys it holds with their first-seen time (survivors hold the cluster's). */
  identifiers: Map<string, string>;
}

export interface ModelResult {
  profiles: Map<string, ModelProfile>;
  /** Stored events, with the profile they end on. */
  events: { event: StreamEvent; profileId: string }[];
  conflicts: { profileId: string; otherProfileId: string | null; eventId: string }[];
  /** Each merge with its cluster's survivor at the end (a survivor's history lists them all). */
  merges: { mergedProfileId: string; survivorProfileId: string; eventId: string }[];
  duplicates: number;
  rejected: number;
}

const BUILT_IN: ReadonlyMap<string, readonly string[]> = new Map([
  ['*', ['null', 'undefined', 'none', 'n/a', 'na', '-', 'unknown', '0']],
  ['email', ['test@test.com', 'test@example.com', 'noreply@example.com']],
  ['phone', ['0000000000', '+910000000000', '1234567890', '+911234567890']],
]);

/** Design §10: email trimmed and lowercased, phone E.164 (default country IN), others trimmed. */
export function normalize(type: string, raw: string): string | null {
  const value = raw.trim();
  if (value === '') return null;
  if (type === 'email') return value.toLowerCase();
  if (type === 'phone') {
    const phone = parsePhoneNumberFromString(value, 'IN');
    return phone?.isValid() ? phone.number : null;
  }
  return value;
}

function isPlaceholder(rules: ModelRules, type: string, raw: string, normalized: string): boolean {
  const lists = [BUILT_IN, rules.tenantPlaceholders].flatMap((byType) => [
    ...(byType.get('*') ?? []),
    ...(byType.get(type) ?? []),
  ]);
  const values = new Set(lists.map((value) => value.trim().toLowerCase()));
  return values.has(normalized.toLowerCase()) || values.has(raw.trim().toLowerCase());
}

/** The event's usable identifier keys with their types, anon_id first, in written order. */
export function usableKeys(rules: ModelRules, event: StreamEvent): [string, string][] {
  const candidates: [string, string][] = [
    ...(event.anon === undefined ? [] : [['cookie', event.anon] as [string, string]]),
    ...event.identifiers,
  ];
  const keys = new Map<string, string>();
  for (const [type, raw] of candidates) {
    if (!rules.declaredTypes.includes(type)) continue;
    if (event.source === 'browser' && type !== 'cookie' && type !== 'device_id') continue;
    const normalized = normalize(type, raw);
    if (normalized === null || isPlaceholder(rules, type, raw, normalized)) continue;
    const key = rules.keyOf(type, normalized);
    if (!keys.has(key)) keys.set(key, type);
  }
  return [...keys];
}

function dedupKey(rules: ModelRules, event: StreamEvent): string {
  const dedup = rules.dedup.get(event.name);
  if (!dedup) return `${event.name}\0id:${event.id}`;
  const values = dedup.fields.map((field) => {
    const value = event.properties[field];
    return typeof value === 'string' ? value : '';
  });
  return `${event.name}\0${dedup.entity}:${JSON.stringify(values)}`;
}

/**
 * Runs the stream one event at a time. A copy of a stored event is a duplicate. Only stored
 * events count for dedup ("first seen wins" among the events that reach the events table): one
 * whose every identifier is dropped is rejected (`no_identifiers`), as it is alone in a batch,
 * and a later copy of it with identifiers is stored.
 */
export function runModel(rules: ModelRules, stream: readonly StreamEvent[]): ModelResult {
  const profiles = new Map<string, ModelProfile & { typeCounts: Map<string, number> }>();
  const ownerOf = new Map<string, string>();
  const typeOfKey = new Map<string, string>();
  const result: ModelResult = {
    profiles,
    events: [],
    conflicts: [],
    merges: [],
    duplicates: 0,
    rejected: 0,
  };
  const seen = new Set<string>();
  const live = (profileId: string) => {
    let profile = profiles.get(profileId);
    while (profile?.mergedInto) profile = profiles.get(profile.mergedInto);
    if (!profile) throw new Error(`model: no profile ${profileId}`);
    return profile;
  };
  const room = (profile: { typeCounts: Map<string, number> }, type: string, extra: number) => {
    const max = rules.maxPerProfile.get(type);
    return max === undefined || (profile.typeCounts.get(type) ?? 0) + extra <= max;
  };
  const stored: { event: StreamEvent; profileId: string }[] = [];

  for (const event of stream) {
    const dedup = dedupKey(rules, event);
    if (seen.has(dedup)) {
      result.duplicates += 1;
      continue;
    }
    const keys = usableKeys(rules, event);
    if (keys.length === 0) {
      result.rejected += 1;
      continue;
    }
    seen.add(dedup);
    for (const [key, type] of keys) typeOfKey.set(key, type);

    const known: ReturnType<typeof live>[] = [];
    for (const [key] of keys) {
      const owner = ownerOf.get(key);
      if (owner === undefined) continue;
      const profile = live(owner);
      if (!known.includes(profile)) known.push(profile);
    }
    const unknown = keys.filter(([key]) => !ownerOf.has(key));
    let target: ReturnType<typeof live>;
    const [first] = known;
    if (first === undefined) {
      const [firstKey] = keys[0] as [string, string];
      const profileId = profileIdFor(rules.tenantId, rules.workspaceId, firstKey, event.id);
      target = {
        profileId,
        createdAt: event.occuredAt,
        mergedInto: null,
        identifiers: new Map(),
        typeCounts: new Map(),
      };
      profiles.set(profileId, target);
    } else if (known.length === 1 || event.source === 'browser') {
      // A browser event goes to its first matching identifier's profile and merges nothing.
      target = first;
    } else {
      // A merge whose result would hold more of a type than max_per_profile, the event's new
      // identifiers included, does not happen: the event goes to its first matching profile.
      const totals = new Map<string, number>();
      for (const profile of known) {
        for (const [type, n] of profile.typeCounts) totals.set(type, (totals.get(type) ?? 0) + n);
      }
      for (const [, type] of unknown) totals.set(type, (totals.get(type) ?? 0) + 1);
      const blocked = [...totals].some(([type, n]) => {
        const max = rules.maxPerProfile.get(type);
        return max !== undefined && n > max;
      });
      if (blocked) {
        target = first;
        for (const other of known.slice(1)) {
          result.conflicts.push({
            profileId: first.profileId,
            otherProfileId: other.profileId,
            eventId: event.id,
          });
        }
      } else {
        const [oldest, ...rest] = [...known].sort(
          (a, b) =>
            a.createdAt.localeCompare(b.createdAt) || a.profileId.localeCompare(b.profileId),
        ) as [ReturnType<typeof live>, ...ReturnType<typeof live>[]];
        target = oldest;
        for (const merged of rest) {
          merged.mergedInto = oldest.profileId;
          result.merges.push({
            mergedProfileId: merged.profileId,
            survivorProfileId: oldest.profileId,
            eventId: event.id,
          });
          for (const [type, n] of merged.typeCounts)
            oldest.typeCounts.set(type, (oldest.typeCounts.get(type) ?? 0) + n);
          for (const [key, at] of merged.identifiers) oldest.identifiers.set(key, at);
          merged.identifiers.clear();
        }
      }
    }
    for (const [key, type] of unknown) {
      if (!room(target, type, 1)) {
        result.conflicts.push({
          profileId: target.profileId,
          otherProfileId: null,
          eventId: event.id,
        });
        continue;
      }
      target.typeCounts.set(type, (target.typeCounts.get(type) ?? 0) + 1);
      target.identifiers.set(key, event.occuredAt);
      ownerOf.set(key, target.profileId);
    }
    stored.push({ event, profileId: target.profileId });
  }

  // merged_into never chains: every merged profile names its cluster's survivor.
  for (const profile of profiles.values()) {
    if (profile.mergedInto) profile.mergedInto = live(profile.mergedInto).profileId;
  }
  for (const merge of result.merges)
    merge.survivorProfileId = live(merge.survivorProfileId).profileId;
  result.events = stored.map((event) => ({ ...event, profileId: live(event.profileId).profileId }));
  return result;
}

const DAY_MS = 86_400_000;

/** True when the event's UTC day is within `windowDays` days ending today (future days count). */
export function inWindow(occuredAt: string, today: string, windowDays: number): boolean {
  const first = new Date(Date.parse(`${today}T00:00:00Z`) - (windowDays - 1) * DAY_MS);
  return occuredAt.slice(0, 10) >= first.toISOString().slice(0, 10);
}

/** `latest` (design §12, decisions: ties on occured_at go to the greater string). */
export function latestString(values: { at: string; value: string }[]): string | null {
  let best: { at: string; value: string } | null = null;
  for (const candidate of values) {
    if (
      best === null ||
      candidate.at > best.at ||
      (candidate.at === best.at && candidate.value > best.value)
    )
      best = candidate;
  }
  return best?.value ?? null;
}
