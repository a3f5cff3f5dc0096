import { createHash } from 'node:crypto';
import type { EventSource } from '../landing-format.js';

/** Events of one workspace that carried the same identifier keys, resolved once. */
export interface IdentitySet {
  /** Numbers the set within its batch. */
  setId: number;
  source: EventSource;
  /** Identifier keys in the order the event gave them (anon_id first). */
  keys: string[];
  firstEventId: string;
  firstAt: string;
}

/**
 * A later event of a set whose first event left its keys with more than one profile, or with
 * none (a key refused by `max_per_profile`, a merge it blocked, a browser event that merged
 * nothing). Such a repeat may resolve otherwise than the first event did, so it is resolved at
 * its own place in the batch, as if the events came one by one.
 */
export interface Repeat {
  setId: number;
  /** The event's place in the batch; sets are numbered by their first event's place. */
  offset: number;
  eventId: string;
  at: string;
}

export interface KnownProfile {
  profileId: string;
  createdAt: string;
  /** How many identifiers of each type the profile holds now. */
  typeCounts: Map<string, number>;
}

export interface ResolutionInput {
  tenantId: string;
  workspaceId: string;
  sets: IdentitySet[];
  typeOfKey: ReadonlyMap<string, string>;
  maxPerProfile: ReadonlyMap<string, number>;
  /** Profiles that already hold some of the batch's keys, and which key is whose. */
  profileOfKey: ReadonlyMap<string, string>;
  profiles: ReadonlyMap<string, KnownProfile>;
  /** Later events of unsettled sets, to resolve at their places (`unsettledSets` names the sets). */
  repeats?: readonly Repeat[];
}

export interface NewIdentifier {
  key: string;
  profileId: string;
  firstSeenAt: string;
}

export interface Merge {
  mergedProfileId: string;
  survivorProfileId: string;
  eventId: string;
}

export interface Conflict {
  profileId: string;
  otherProfileId: string | null;
  identifierType: string;
  reason: 'max_per_profile';
  eventId: string;
}

export interface Resolution {
  newProfiles: { profileId: string; createdAt: string }[];
  newIdentifiers: NewIdentifier[];
  merges: Merge[];
  conflicts: Conflict[];
  /** The final profile of each set's events, by set id. */
  profileOfSet: Map<number, string>;
  /** The final profile of each repeat given, by its offset: it overrides its set's. */
  profileOfRepeat: Map<number, string>;
  /**
   * Sets whose first event left their keys with more than one profile or none: their later
   * events must be given as repeats for the resolution to be that of one event at a time.
   */
  unsettledSets: Set<number>;
}

/** Deterministic, so the same stream gives the same ids however it is cut into batches. */
export function profileIdFor(
  tenantId: string,
  workspaceId: string,
  key: string,
  eventId: string,
): string {
  return `p_${createHash('sha256').update(`${tenantId}\0${workspaceId}\0${key}\0${eventId}`).digest('hex').slice(0, 24)}`;
}

interface LiveProfile extends KnownProfile {
  mergedInto: string | null;
}

/** One event resolved: a set's first event, or a repeat. */
interface Occurrence {
  set: IdentitySet;
  offset: number;
  eventId: string;
  at: string;
  first: boolean;
}

/**
 * Identity resolution for one workspace and one batch (design §10), as if its events came one by
 * one: keys matching no profile start one; keys matching one attach to it; keys matching several
 * merge them into the oldest, unless the event came from a browser (it goes to the profile of its
 * first known key and nothing merges) or a type would exceed its `max_per_profile` (no merge, a
 * conflict is recorded). Sets arrive in order of first use. A later event of a set whose first
 * event left all its keys with one profile changes nothing, as every key it names is that
 * profile's (merges keep them together); any other later event is a `Repeat`, resolved at its
 * place. The caller resolves again with the repeats of every set in `unsettledSets` until no new
 * set is named there (`resolveExactly`).
 */
export function resolveIdentities(input: ResolutionInput): Resolution {
  const profiles = new Map<string, LiveProfile>();
  for (const [id, known] of input.profiles) {
    profiles.set(id, { ...known, typeCounts: new Map(known.typeCounts), mergedInto: null });
  }
  const profileOfKey = new Map(input.profileOfKey);
  const resolution: Resolution = {
    newProfiles: [],
    newIdentifiers: [],
    merges: [],
    conflicts: [],
    profileOfSet: new Map(),
    profileOfRepeat: new Map(),
    unsettledSets: new Set(),
  };

  const live = (profileId: string): LiveProfile => {
    let profile = profiles.get(profileId) as LiveProfile;
    while (profile.mergedInto) profile = profiles.get(profile.mergedInto) as LiveProfile;
    return profile;
  };
  const typeOf = (key: string) => input.typeOfKey.get(key) as string;
  const roomFor = (profile: LiveProfile, type: string, extra: number) => {
    const max = input.maxPerProfile.get(type);
    return max === undefined || (profile.typeCounts.get(type) ?? 0) + extra <= max;
  };
  const attach = (profile: LiveProfile, key: string, event: Occurrence) => {
    const type = typeOf(key);
    if (!roomFor(profile, type, 1)) {
      resolution.conflicts.push({
        profileId: profile.profileId,
        otherProfileId: null,
        identifierType: type,
        reason: 'max_per_profile',
        eventId: event.eventId,
      });
      return;
    }
    profile.typeCounts.set(type, (profile.typeCounts.get(type) ?? 0) + 1);
    profileOfKey.set(key, profile.profileId);
    resolution.newIdentifiers.push({ key, profileId: profile.profileId, firstSeenAt: event.at });
  };
  const mergeBlockedBy = (cluster: LiveProfile[], newKeys: string[]): string | null => {
    const totals = new Map<string, number>();
    for (const profile of cluster) {
      for (const [type, count] of profile.typeCounts)
        totals.set(type, (totals.get(type) ?? 0) + count);
    }
    for (const key of newKeys) totals.set(typeOf(key), (totals.get(typeOf(key)) ?? 0) + 1);
    // By name: where several types are over, the conflict names the same one however the
    // stored counts were read.
    for (const type of [...totals.keys()].sort()) {
      const max = input.maxPerProfile.get(type);
      if (max !== undefined && (totals.get(type) ?? 0) > max) return type;
    }
    return null;
  };

  const setsById = new Map(input.sets.map((set) => [set.setId, set]));
  const occurrences: Occurrence[] = [
    ...input.sets.map((set) => ({
      set,
      offset: set.setId,
      eventId: set.firstEventId,
      at: set.firstAt,
      first: true,
    })),
    ...(input.repeats ?? []).map((repeat) => ({
      set: setsById.get(repeat.setId) as IdentitySet,
      offset: repeat.offset,
      eventId: repeat.eventId,
      at: repeat.at,
      first: false,
    })),
  ].sort((a, b) => a.offset - b.offset);

  for (const occurrence of occurrences) {
    const { set } = occurrence;
    const keys = [...new Set(set.keys)];
    const firstKey = keys[0] as string;
    const unknownKeys = keys.filter((key) => !profileOfKey.has(key));
    const knownProfiles: LiveProfile[] = [];
    for (const key of keys) {
      const keyProfile = profileOfKey.get(key);
      if (keyProfile === undefined) continue;
      const profile = live(keyProfile);
      if (!knownProfiles.includes(profile)) knownProfiles.push(profile);
    }

    let target: LiveProfile;
    const [firstKnown] = knownProfiles;
    if (firstKnown === undefined) {
      const profileId = profileIdFor(
        input.tenantId,
        input.workspaceId,
        firstKey,
        occurrence.eventId,
      );
      target = { profileId, createdAt: occurrence.at, typeCounts: new Map(), mergedInto: null };
      profiles.set(profileId, target);
      resolution.newProfiles.push({ profileId, createdAt: occurrence.at });
    } else if (knownProfiles.length === 1 || set.source === 'browser') {
      target = firstKnown;
    } else {
      const blockedType = mergeBlockedBy(knownProfiles, unknownKeys);
      const ordered = [...knownProfiles].sort(
        (a, b) => a.createdAt.localeCompare(b.createdAt) || a.profileId.localeCompare(b.profileId),
      );
      if (blockedType !== null) {
        target = firstKnown;
        for (const other of knownProfiles.slice(1)) {
          resolution.conflicts.push({
            profileId: firstKnown.profileId,
            otherProfileId: other.profileId,
            identifierType: blockedType,
            reason: 'max_per_profile',
            eventId: occurrence.eventId,
          });
        }
      } else {
        target = ordered[0] as LiveProfile;
        for (const merged of ordered.slice(1)) {
          merged.mergedInto = target.profileId;
          for (const [type, count] of merged.typeCounts) {
            target.typeCounts.set(type, (target.typeCounts.get(type) ?? 0) + count);
          }
          resolution.merges.push({
            mergedProfileId: merged.profileId,
            survivorProfileId: target.profileId,
            eventId: occurrence.eventId,
          });
        }
      }
    }
    for (const key of unknownKeys) attach(target, key, occurrence);
    if (!occurrence.first) {
      resolution.profileOfRepeat.set(occurrence.offset, target.profileId);
      continue;
    }
    resolution.profileOfSet.set(set.setId, target.profileId);
    const settled = keys.every((key) => {
      const keyProfile = profileOfKey.get(key);
      return keyProfile !== undefined && live(keyProfile) === live(target.profileId);
    });
    if (!settled) resolution.unsettledSets.add(set.setId);
  }

  for (const [setId, profileId] of resolution.profileOfSet)
    resolution.profileOfSet.set(setId, live(profileId).profileId);
  for (const [offset, profileId] of resolution.profileOfRepeat)
    resolution.profileOfRepeat.set(offset, live(profileId).profileId);
  for (const identifier of resolution.newIdentifiers)
    identifier.profileId = live(identifier.profileId).profileId;
  for (const merge of resolution.merges)
    merge.survivorProfileId = live(merge.survivorProfileId).profileId;
  return resolution;
}
