import type { Store } from '../store/database.js';
import {
  readSavedIndex,
  type Section,
  type Sections,
  savedIndexPath,
  writeSavedIndex,
} from '../store/index-files.js';
import type { AppendValue, Session } from '../store/session.js';
import { traced } from '../trace.js';
import { LoadAhead } from './load-ahead.js';

/** An index whose contents no longer follow the tables: built again at the next batch. */
class IndexOutOfStep extends Error {}

/** Tables start this large and double; a hash table is never fuller than MAX_LOAD. */
const FIRST_CAPACITY = 1 << 12;
const MAX_LOAD = 0.7;
/** Rows are allocated for what a build reads and a tenth more, then doubled as batches add. */
const ROOM = 1.1;
/** An identifier key is base64url(HMAC-SHA256): 32 bytes. */
const KEY_BYTES = 32;
/**
 * The index holds a key's first 16 bytes, as 4 words: an HMAC's first 128 bits are as unique as
 * the dedup hash, which decides duplicates (two of 10M keys sharing them: about 1 in 10^25).
 */
const KEY_WORDS = 4;
const KEY_TEXT_LENGTH = 43;
const NONE = -1;

/** What the tables held when an index was saved: their counts and a sum of their rows' hashes. */
interface TableChecksum {
  profiles: number;
  identifiers: number;
  profiles_sum: string;
  identifiers_sum: string;
}

/** What a saved index holds besides its arrays. */
interface SavedHeader {
  checksum: TableChecksum;
  scopes: [string, string][];
  types: string[];
  profileIds: string[];
  identifiers: number;
}

/** What a saved index holds, as `IdentifierContents.saved` gives it. */
type SavedContents = Omit<SavedHeader, 'checksum'> & { sections: Sections };

/**
 * A saved section of `rows` rows of `width` values as an array of its own, with room to grow as
 * a built one has (slots, `rows` absent, as saved); a wrong one is out of step.
 */
function section<T extends Section>(
  sections: Sections,
  name: string,
  type: new (length: number) => T,
  rows?: number,
  width = 1,
): T {
  const saved = sections[name];
  if (!(saved instanceof type) || (rows !== undefined && saved.length !== rows * width))
    throw new IndexOutOfStep(`saved section ${name}`);
  if (rows === undefined) return saved as T;
  const room = new type(Math.max(FIRST_CAPACITY, Math.ceil(rows * ROOM)) * width);
  room.set(saved as never);
  return room;
}

function capacityFor(expected: number): number {
  let capacity = FIRST_CAPACITY;
  while (capacity * MAX_LOAD < expected) capacity *= 2;
  return capacity;
}

function grown<T extends Int32Array | Uint32Array | Uint16Array | Float64Array>(
  array: T,
  length: number,
): T {
  const next = new (array.constructor as new (length: number) => T)(length);
  next.set(array);
  return next;
}

/** FNV-1a of a profile id, with its scope: profile ids are ours, but any text must hash. */
function profileHash(scope: number, profileId: string): number {
  let hash = (2166136261 ^ scope) >>> 0;
  for (let at = 0; at < profileId.length; at += 1) {
    hash ^= profileId.charCodeAt(at);
    hash = Math.imul(hash, 16777619);
  }
  return hash >>> 0;
}

/** Tenants and workspaces, and identifier types, as small numbers. */
class Names {
  private readonly scopeNumbers = new Map<string, Map<string, number>>();
  readonly tenantOfScope: string[] = [];
  readonly workspaceOfScope: string[] = [];
  private readonly typeNumbers = new Map<string, number>();
  readonly types: string[] = [];

  scope(tenantId: string, workspaceId: string): number {
    let workspaces = this.scopeNumbers.get(tenantId);
    if (!workspaces) {
      workspaces = new Map();
      this.scopeNumbers.set(tenantId, workspaces);
    }
    let scope = workspaces.get(workspaceId);
    if (scope === undefined) {
      scope = this.tenantOfScope.length;
      workspaces.set(workspaceId, scope);
      this.tenantOfScope.push(tenantId);
      this.workspaceOfScope.push(workspaceId);
    }
    return scope;
  }

  knownScope(tenantId: string, workspaceId: string): number | undefined {
    return this.scopeNumbers.get(tenantId)?.get(workspaceId);
  }

  type(name: string): number {
    let type = this.typeNumbers.get(name);
    if (type === undefined) {
      type = this.types.length;
      this.typeNumbers.set(name, type);
      this.types.push(name);
    }
    return type;
  }
}

/**
 * Open-addressing slots holding row numbers by a 32-bit hash of each row, never fuller than
 * MAX_LOAD: what both tables of the index look their rows up by.
 */
class RowSlots {
  constructor(public array: Int32Array) {}

  static sized(expected: number): RowSlots {
    return new RowSlots(new Int32Array(capacityFor(expected)).fill(NONE));
  }

  /** Every row on the probe path of `hash`: the caller keeps those that match. */
  *rows(hash: number): Generator<number> {
    const mask = this.array.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const row = this.array[slot] as number;
      if (row === NONE) return;
      yield row;
    }
  }

  /** Places row `rows - 1` of `rows`, doubling first when full (`hashOf` gives each row's hash). */
  add(rows: number, hashOf: (row: number) => number): void {
    if (rows > this.array.length * MAX_LOAD) {
      this.array = new Int32Array(this.array.length * 2).fill(NONE);
      for (let row = 0; row < rows - 1; row += 1) this.place(row, hashOf(row));
    }
    this.place(rows - 1, hashOf(rows - 1));
  }

  private place(row: number, hash: number): void {
    const mask = this.array.length - 1;
    let slot = hash & mask;
    while (this.array[slot] !== NONE) slot = (slot + 1) & mask;
    this.array[slot] = row;
  }
}

/**
 * Profiles by workspace and id, each with its created_at (µs), the profile it was merged into
 * (followed to the survivor) and the first and last of its identifiers, which are chained: a
 * merge appends the merged profile's chain to the survivor's.
 */
class ProfileTable {
  ids: string[] = [];
  scopes: Int32Array;
  createdUs: Float64Array;
  mergedInto: Int32Array;
  firstIdentifier: Int32Array;
  lastIdentifier: Int32Array;
  private slots: RowSlots;
  size = 0;

  constructor(expected: number) {
    this.slots = RowSlots.sized(expected);
    const rows = Math.max(FIRST_CAPACITY, Math.ceil(expected * ROOM));
    this.scopes = new Int32Array(rows);
    this.createdUs = new Float64Array(rows);
    this.mergedInto = new Int32Array(rows);
    this.firstIdentifier = new Int32Array(rows);
    this.lastIdentifier = new Int32Array(rows);
  }

  /** What a saved index holds of it (`identifier-index-file.ts`). */
  sections(): Sections {
    const rows = this.size;
    return {
      profileScopes: this.scopes.subarray(0, rows),
      profileCreatedUs: this.createdUs.subarray(0, rows),
      profileMergedInto: this.mergedInto.subarray(0, rows),
      profileFirstIdentifier: this.firstIdentifier.subarray(0, rows),
      profileLastIdentifier: this.lastIdentifier.subarray(0, rows),
      profileSlots: this.slots.array,
    };
  }

  /** The table as saved, with its ids. */
  static restored(ids: string[], sections: Sections): ProfileTable {
    const table = new ProfileTable(0);
    table.ids = ids;
    table.size = ids.length;
    table.scopes = section(sections, 'profileScopes', Int32Array, ids.length);
    table.createdUs = section(sections, 'profileCreatedUs', Float64Array, ids.length);
    table.mergedInto = section(sections, 'profileMergedInto', Int32Array, ids.length);
    table.firstIdentifier = section(sections, 'profileFirstIdentifier', Int32Array, ids.length);
    table.lastIdentifier = section(sections, 'profileLastIdentifier', Int32Array, ids.length);
    table.slots = new RowSlots(section(sections, 'profileSlots', Int32Array));
    return table;
  }

  find(scope: number, profileId: string): number {
    for (const row of this.slots.rows(profileHash(scope, profileId)))
      if (this.scopes[row] === scope && this.ids[row] === profileId) return row;
    return NONE;
  }

  /** Adds a profile not in the table; returns its row. */
  add(scope: number, profileId: string, createdUs: number): number {
    const row = this.size;
    this.size += 1;
    if (row >= this.scopes.length) this.growRows();
    this.ids.push(profileId);
    this.scopes[row] = scope;
    this.createdUs[row] = createdUs;
    this.mergedInto[row] = NONE;
    this.firstIdentifier[row] = NONE;
    this.lastIdentifier[row] = NONE;
    this.slots.add(this.size, (at) =>
      profileHash(this.scopes[at] as number, this.ids[at] as string),
    );
    return row;
  }

  /** The profile a row ends in, following merges (and shortening the path it took). */
  survivor(row: number): number {
    let survivor = row;
    while ((this.mergedInto[survivor] as number) !== NONE)
      survivor = this.mergedInto[survivor] as number;
    for (let at = row; at !== survivor; ) {
      const next = this.mergedInto[at] as number;
      this.mergedInto[at] = survivor;
      at = next;
    }
    return survivor;
  }

  private growRows(): void {
    const rows = this.scopes.length * 2;
    this.scopes = grown(this.scopes, rows);
    this.createdUs = grown(this.createdUs, rows);
    this.mergedInto = grown(this.mergedInto, rows);
    this.firstIdentifier = grown(this.firstIdentifier, rows);
    this.lastIdentifier = grown(this.lastIdentifier, rows);
  }
}

/**
 * Identifier keys by their bytes, each with its workspace, type and the profile it was stored
 * with, chained to the next identifier of that profile. Keys are HMACs, so their first word is
 * the slot.
 */
class IdentifierTable {
  words: Uint32Array;
  scopes: Int32Array;
  types: Uint16Array;
  profiles: Int32Array;
  next: Int32Array;
  private slots: RowSlots;
  size = 0;

  constructor(expected: number) {
    this.slots = RowSlots.sized(expected);
    const rows = Math.max(FIRST_CAPACITY, Math.ceil(expected * ROOM));
    this.words = new Uint32Array(rows * KEY_WORDS);
    this.scopes = new Int32Array(rows);
    this.types = new Uint16Array(rows);
    this.profiles = new Int32Array(rows);
    this.next = new Int32Array(rows);
  }

  /** What a saved index holds of it (`identifier-index-file.ts`). */
  sections(): Sections {
    const rows = this.size;
    return {
      identifierWords: this.words.subarray(0, rows * KEY_WORDS),
      identifierScopes: this.scopes.subarray(0, rows),
      identifierTypes: this.types.subarray(0, rows),
      identifierProfiles: this.profiles.subarray(0, rows),
      identifierNext: this.next.subarray(0, rows),
      identifierSlots: this.slots.array,
    };
  }

  static restored(rows: number, sections: Sections): IdentifierTable {
    const table = new IdentifierTable(0);
    table.size = rows;
    table.words = section(sections, 'identifierWords', Uint32Array, rows, KEY_WORDS);
    table.scopes = section(sections, 'identifierScopes', Int32Array, rows);
    table.types = section(sections, 'identifierTypes', Uint16Array, rows);
    table.profiles = section(sections, 'identifierProfiles', Int32Array, rows);
    table.next = section(sections, 'identifierNext', Int32Array, rows);
    table.slots = new RowSlots(section(sections, 'identifierSlots', Int32Array));
    return table;
  }

  /** Each row holding this key (one per workspace of its tenant that stored it). */
  *rowsOf(key: Uint32Array): Generator<number> {
    for (const row of this.slots.rows(key[0] as number)) if (this.holds(row, key)) yield row;
  }

  add(key: Uint32Array, scope: number, type: number, profile: number): number {
    const row = this.size;
    this.size += 1;
    if (row >= this.scopes.length) this.growRows();
    this.words.set(key, row * KEY_WORDS);
    this.scopes[row] = scope;
    this.types[row] = type;
    this.profiles[row] = profile;
    this.next[row] = NONE;
    this.slots.add(this.size, (at) => this.words[at * KEY_WORDS] as number);
    return row;
  }

  private holds(row: number, key: Uint32Array): boolean {
    const base = row * KEY_WORDS;
    for (let word = 0; word < KEY_WORDS; word += 1)
      if (this.words[base + word] !== key[word]) return false;
    return true;
  }

  private growRows(): void {
    const rows = this.scopes.length * 2;
    this.words = grown(this.words, rows * KEY_WORDS);
    this.scopes = grown(this.scopes, rows);
    this.types = grown(this.types, rows);
    this.profiles = grown(this.profiles, rows);
    this.next = grown(this.next, rows);
  }
}

/** An identifier key's bytes as words, in `into`; false when the text is not such a key. */
function keyWords(key: string, scratch: Buffer, into: Uint32Array): boolean {
  if (key.length !== KEY_TEXT_LENGTH) return false;
  if (scratch.write(key, 'base64url') !== KEY_BYTES) return false;
  for (let word = 0; word < KEY_WORDS; word += 1) into[word] = scratch.readUInt32LE(word * 4);
  return true;
}

/** What a committed batch stored of profiles, identifiers and merges, per workspace. */
export interface IdentityAdditions {
  profiles: { tenant_id: string; workspace_id: string; ids: string[]; created: number[] }[];
  identifiers: {
    tenant_id: string;
    workspace_id: string;
    keys: string[];
    types: string[];
    profiles: string[];
  }[];
  merges: { tenant_id: string; workspace_id: string; merged: string[]; survivors: string[] }[];
}

/**
 * Reads what the batch's identity step stored, in its transaction, for after its commit: as JSON
 * lists per workspace, far cheaper to cross than rows of DuckDB values (250k identifiers in a
 * batch of 1M new customers).
 */
export async function identityAdditions(session: Session): Promise<IdentityAdditions> {
  return {
    profiles: await session.json('identifier_index_new_profiles'),
    identifiers: await session.json('identifier_index_new_identifiers'),
    merges: await session.json('identifier_index_merges'),
  };
}

const isoFromMicros = (micros: number) => new Date(Math.floor(micros / 1000)).toISOString();

/** The index's contents, built from the tables or followed from commits. */
class IdentifierContents {
  readonly names = new Names();
  readonly profiles: ProfileTable;
  readonly identifiers: IdentifierTable;
  private readonly scratch = Buffer.alloc(KEY_BYTES + 3);
  private readonly key = new Uint32Array(KEY_WORDS);

  constructor(profiles: ProfileTable, identifiers: IdentifierTable) {
    this.profiles = profiles;
    this.identifiers = identifiers;
  }

  static sized(profiles: number, identifiers: number): IdentifierContents {
    return new IdentifierContents(new ProfileTable(profiles), new IdentifierTable(identifiers));
  }

  /** What a saved index holds: its names, profile ids and tables. */
  saved(): SavedContents {
    return {
      scopes: this.names.tenantOfScope.map((tenantId, scope) => [
        tenantId,
        this.names.workspaceOfScope[scope] as string,
      ]),
      types: [...this.names.types],
      profileIds: this.profiles.ids,
      identifiers: this.identifiers.size,
      sections: { ...this.profiles.sections(), ...this.identifiers.sections() },
    };
  }

  static restored(saved: SavedContents): IdentifierContents {
    const contents = new IdentifierContents(
      ProfileTable.restored(saved.profileIds, saved.sections),
      IdentifierTable.restored(saved.identifiers, saved.sections),
    );
    for (const [tenantId, workspaceId] of saved.scopes) contents.names.scope(tenantId, workspaceId);
    for (const type of saved.types) contents.names.type(type);
    return contents;
  }

  /** Adds a profile; one there already is out of step after a commit, and kept once in a build. */
  addProfile(
    tenantId: string,
    workspaceId: string,
    profileId: string,
    createdUs: number,
    strict: boolean,
  ): number {
    const scope = this.names.scope(tenantId, workspaceId);
    const row = this.profiles.find(scope, profileId);
    if (row === NONE) return this.profiles.add(scope, profileId, createdUs);
    if (strict) throw new IndexOutOfStep('profile twice');
    return row;
  }

  profileRow(tenantId: string, workspaceId: string, profileId: string): number {
    const scope = this.names.knownScope(tenantId, workspaceId);
    const row = scope === undefined ? NONE : this.profiles.find(scope, profileId);
    if (row === NONE) throw new IndexOutOfStep('unknown profile');
    return row;
  }

  /** Adds an identifier following a commit: one that does not fit means the index is out of step. */
  addIdentifier(
    tenantId: string,
    workspaceId: string,
    key: string,
    type: string,
    profileId: string,
  ): void {
    const profile = this.profileRow(tenantId, workspaceId, profileId);
    if (!this.addIdentifierOf(profile, key, this.names.type(type)))
      throw new IndexOutOfStep('identifier twice or not a key');
  }

  /**
   * Adds an identifier of a profile row; false (and nothing added) when the text is not a key
   * or the profile's workspace holds the key already. Built from the tables, such a row is left
   * out: a batch's keys never have another form, and a key held twice keeps its first row.
   */
  addIdentifierOf(profile: number, key: string, type: number): boolean {
    if (!keyWords(key, this.scratch, this.key)) return false;
    const scope = this.profiles.scopes[profile] as number;
    for (const row of this.identifiers.rowsOf(this.key))
      if (this.identifiers.scopes[row] === scope) return false;
    const row = this.identifiers.add(this.key, scope, type, profile);
    const survivor = this.profiles.survivor(profile);
    const last = this.profiles.lastIdentifier[survivor] as number;
    if (last === NONE) this.profiles.firstIdentifier[survivor] = row;
    else this.identifiers.next[last] = row;
    this.profiles.lastIdentifier[survivor] = row;
    return true;
  }

  /**
   * A merge as the tables take it: the survivor keeps its own created_at (it is the cluster's
   * oldest, docs/decisions.md "Merges") and gains the merged profile's identifiers.
   */
  setMergedInto(merged: number, survivor: number): void {
    const { profiles } = this;
    profiles.mergedInto[merged] = survivor;
    const first = profiles.firstIdentifier[merged] as number;
    if (first === NONE) return;
    const last = profiles.lastIdentifier[survivor] as number;
    if (last === NONE) profiles.firstIdentifier[survivor] = first;
    else this.identifiers.next[last] = first;
    profiles.lastIdentifier[survivor] = profiles.lastIdentifier[merged] as number;
    profiles.firstIdentifier[merged] = NONE;
    profiles.lastIdentifier[merged] = NONE;
  }

  merge(tenantId: string, workspaceId: string, mergedId: string, survivorId: string): void {
    const merged = this.profiles.survivor(this.profileRow(tenantId, workspaceId, mergedId));
    const survivor = this.profiles.survivor(this.profileRow(tenantId, workspaceId, survivorId));
    if (merged === survivor) throw new IndexOutOfStep('merged into itself');
    this.setMergedInto(merged, survivor);
  }

  /** The rows of `ingest_known` for one key of the batch: its profile in each workspace. */
  knownRows(tenantId: string, key: string, into: AppendValue[][]): void {
    if (!keyWords(key, this.scratch, this.key)) return;
    for (const row of this.identifiers.rowsOf(this.key)) {
      const scope = this.identifiers.scopes[row] as number;
      if (this.names.tenantOfScope[scope] !== tenantId) continue;
      const profile = this.profiles.survivor(this.identifiers.profiles[row] as number);
      into.push([
        tenantId,
        this.names.workspaceOfScope[scope] as string,
        key,
        this.profiles.ids[profile] as string,
        isoFromMicros(this.profiles.createdUs[profile] as number),
      ]);
    }
  }

  /** How many identifiers of each type a profile holds, its merged profiles' included. */
  typeCounts(tenantId: string, workspaceId: string, profileId: string): Map<string, number> {
    const counts = new Map<string, number>();
    const profile = this.profiles.survivor(this.profileRow(tenantId, workspaceId, profileId));
    for (
      let row = this.profiles.firstIdentifier[profile] as number;
      row !== NONE;
      row = this.identifiers.next[row] as number
    ) {
      const type = this.names.types[this.identifiers.types[row] as number] as string;
      counts.set(type, (counts.get(type) ?? 0) + 1);
    }
    return counts;
  }
}

/**
 * The store's identifiers and profiles, indexed in memory (docs/decisions.md, "Identifier
 * index"): a batch finds the profile of each of its keys, how old each profile is and how many
 * identifiers of each type it holds without reading `profiles` or `profile_identifiers`, whose
 * size grows with the store. It follows commits only: a batch's new profiles, identifiers and
 * merges are applied after its commit, and whenever the tables hold other counts than it knows
 * (an erasure, a tenant moved in or out, a batch whose additions were lost) or an addition does
 * not fit what it holds, it is built again from the tables at the next batch.
 */
export class IdentifierIndex {
  private contents: IdentifierContents | null = null;
  private counted = { profiles: NONE, identifiers: NONE };
  /** The saved index is read once, for the process's first batch: later builds follow changes. */
  private savedRead = false;
  /** Where the contents came from when last made: for the log and tests. */
  source: 'saved' | 'tables' | null = null;

  /** `savedPath`: where the index is saved between processes (null: never). */
  constructor(private readonly savedPath: string | null) {}

  private readonly ahead = new LoadAhead();

  /**
   * Loads the contents before any batch needs them, on a reader of its own: a process's first
   * batch then does not pay for reading the saved index (about 1 s at 10M events).
   */
  prepare(store: Store): Promise<unknown> {
    return this.ahead.start(store.read((session) => this.current(session)));
  }

  /** Makes `ingest_known`: the stored identifiers among the batch's keys, with their profiles. */
  async findKnown(session: Session): Promise<void> {
    await this.ahead.settled();
    const contents = await this.current(session);
    await session.run('identifier_index_create_known');
    const rows: AppendValue[][] = [];
    const batchKeys = await session.json<{ tenant_id: string; keys: string[] }[]>(
      'identifier_index_batch_keys',
    );
    for (const { tenant_id, keys } of batchKeys)
      for (const key of keys) contents.knownRows(tenant_id, key, rows);
    await session.appendTemporary('ingest_known', rows);
  }

  /** The identifier counts by type of profiles `findKnown` answered in this batch. */
  typeCounts(tenantId: string, workspaceId: string, profileId: string): Map<string, number> {
    if (!this.contents) throw new Error('typeCounts before findKnown');
    return this.contents.typeCounts(tenantId, workspaceId, profileId);
  }

  /**
   * After the batch's commit: its profiles, identifiers and merges are the tables'. An addition
   * that does not fit (a profile it never had) leaves the index to be built again.
   */
  committed(additions: IdentityAdditions): void {
    const contents = this.contents;
    if (!contents) return;
    try {
      let profiles = 0;
      let identifiers = 0;
      for (const { tenant_id, workspace_id, ids, created } of additions.profiles) {
        for (let at = 0; at < ids.length; at += 1)
          contents.addProfile(
            tenant_id,
            workspace_id,
            ids[at] as string,
            created[at] as number,
            true,
          );
        profiles += ids.length;
      }
      for (const {
        tenant_id,
        workspace_id,
        keys,
        types,
        profiles: owners,
      } of additions.identifiers) {
        for (let at = 0; at < keys.length; at += 1)
          contents.addIdentifier(
            tenant_id,
            workspace_id,
            keys[at] as string,
            types[at] as string,
            owners[at] as string,
          );
        identifiers += keys.length;
      }
      for (const { tenant_id, workspace_id, merged, survivors } of additions.merges)
        for (let at = 0; at < merged.length; at += 1)
          contents.merge(tenant_id, workspace_id, merged[at] as string, survivors[at] as string);
      this.counted.profiles += profiles;
      this.counted.identifiers += identifiers;
    } catch (error) {
      if (!(error instanceof IndexOutOfStep)) throw error;
      this.contents = null;
    }
  }

  /** The contents, built again when the tables hold other counts than they know. */
  private async current(session: Session): Promise<IdentifierContents> {
    const counts = await session.one<{ profiles: number; identifiers: number }>(
      'identifier_index_counts',
    );
    const profiles = Number(counts?.profiles);
    const identifiers = Number(counts?.identifiers);
    if (
      this.contents &&
      profiles === this.counted.profiles &&
      identifiers === this.counted.identifiers
    )
      return this.contents;
    this.contents = null;
    const saved = await this.restored(session);
    const contents =
      saved ??
      (await traced('identifier index build', () => this.build(session, profiles, identifiers)));
    this.source = saved ? 'saved' : 'tables';
    this.contents = contents;
    this.counted = { profiles, identifiers };
    return contents;
  }

  /**
   * The index saved by the last process over this store, if the tables still hold exactly what
   * it was saved from: their counts and the sums of their rows' hashes are compared (a few
   * hundred ms at 10M events, against seconds to build).
   */
  private async restored(session: Session): Promise<IdentifierContents | null> {
    if (this.savedRead || this.savedPath === null) return null;
    this.savedRead = true;
    const path = this.savedPath;
    return traced('identifier index load', async () => {
      const saved = await readSavedIndex(path);
      if (saved === null) return null;
      const header = saved.header as SavedHeader;
      const now = await session.one<TableChecksum>('identifier_index_checksum');
      if (!now || !sameChecksum(header.checksum, now)) return null;
      try {
        return IdentifierContents.restored({ ...header, sections: saved.sections });
      } catch (error) {
        if (error instanceof IndexOutOfStep) return null;
        throw error;
      }
    });
  }

  /**
   * Saves the index beside the database for the next process, when it follows the tables as they
   * are: once no batch runs (a loop stopped, a one-shot ingest done).
   */
  async save(session: Session): Promise<void> {
    await this.ahead.settled();
    if (this.contents === null || this.savedPath === null) return;
    const checksum = await session.one<TableChecksum>('identifier_index_checksum');
    if (
      !checksum ||
      Number(checksum.profiles) !== this.counted.profiles ||
      Number(checksum.identifiers) !== this.counted.identifiers
    )
      return;
    const { sections, ...rest } = this.contents.saved();
    await traced('identifier index save', () =>
      writeSavedIndex(this.savedPath as string, { header: { ...rest, checksum }, sections }),
    );
  }

  /**
   * Reads the tables as numbered in SQL (`identifier_index_number`): the names once, then
   * profiles and identifiers in chunks of columns, as JSON (far cheaper than DuckDB values).
   */
  private async build(
    session: Session,
    profileCount: number,
    identifierCount: number,
  ): Promise<IdentifierContents> {
    const contents = IdentifierContents.sized(profileCount, identifierCount);
    await session.run('identifier_index_number');
    try {
      for (const { tenant_id, workspace_id } of await session.all<{
        tenant_id: string;
        workspace_id: string;
      }>('identifier_index_scope_names'))
        contents.names.scope(tenant_id, workspace_id);
      for (const { identifier_type } of await session.all<{ identifier_type: string }>(
        'identifier_index_type_names',
      ))
        contents.names.type(identifier_type);
      for (let from = 0; from < profileCount; from += BUILD_CHUNK) {
        const chunk = await session.json<ProfileChunk | null>('identifier_index_profile_chunk', {
          from,
          to: from + BUILD_CHUNK,
        });
        if (!chunk) break;
        for (let at = 0; at < chunk.ids.length; at += 1)
          contents.profiles.add(
            chunk.scopes[at] as number,
            chunk.ids[at] as string,
            chunk.created[at] as number,
          );
      }
      const merged = await session.json<MergedChunk | null>('identifier_index_merged_into');
      for (let at = 0; at < (merged?.merged.length ?? 0); at += 1) {
        const profile = merged?.merged[at] as number;
        const survivor = merged?.survivors[at] as number;
        // A chain the tables hold in a loop is cut where it would close.
        if (contents.profiles.survivor(survivor) !== profile)
          contents.profiles.mergedInto[profile] = survivor;
      }
      for (let from = 0; from < identifierCount; from += BUILD_CHUNK) {
        const chunk = await session.json<IdentifierChunk | null>(
          'identifier_index_identifier_chunk',
          { from, to: from + BUILD_CHUNK },
        );
        if (!chunk) break;
        for (let at = 0; at < chunk.keys.length; at += 1)
          contents.addIdentifierOf(
            chunk.profiles[at] as number,
            chunk.keys[at] as string,
            chunk.types[at] as number,
          );
      }
    } finally {
      await session.run('identifier_index_drop_numbered');
    }
    return contents;
  }
}

/** Rows a build reads at once. */
const BUILD_CHUNK = 200_000;

interface ProfileChunk {
  ids: string[];
  scopes: number[];
  created: number[];
}

interface MergedChunk {
  merged: number[];
  survivors: number[];
}

interface IdentifierChunk {
  profiles: number[];
  types: number[];
  keys: string[];
}

const indexes = new WeakMap<Store, IdentifierIndex>();

/** The identifier index of a store, one per open store in this process. */
export function identifierIndexOf(store: Store): IdentifierIndex {
  let index = indexes.get(store);
  if (!index) {
    index = new IdentifierIndex(savedIndexPath(store, 'identifier'));
    indexes.set(store, index);
  }
  return index;
}

function sameChecksum(saved: TableChecksum, now: TableChecksum): boolean {
  return (
    Number(saved.profiles) === Number(now.profiles) &&
    Number(saved.identifiers) === Number(now.identifiers) &&
    String(saved.profiles_sum) === String(now.profiles_sum) &&
    String(saved.identifiers_sum) === String(now.identifiers_sum)
  );
}
