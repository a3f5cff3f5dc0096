import type { Store } from '../store/database.js';
import {
  readSavedIndex,
  type Sections,
  savedIndexPath,
  writeSavedIndex,
} from '../store/index-files.js';
import type { Session } from '../store/session.js';
import { sessionOf, type TemporaryTable, temporaryTable } from '../store/temporary-table.js';
import { traced } from '../trace.js';
import type { Staged } from './line-source.js';
import { LoadAhead } from './load-ahead.js';

/** The table starts this large and doubles; it is never fuller than MAX_LOAD. */
const FIRST_CAPACITY = 1 << 16;
const MAX_LOAD = 0.7;
/**
 * A batch whose possible duplicates lie in more ingest seconds than this reads one range from
 * the first to the last (a replayed file's keys spread over its whole history): fewer statements,
 * each reading more.
 */
const MAX_RANGES = 16;
/**
 * How entries are laid out, in a saved index's header: one saved before entries were placed by
 * their home is not taken (its entries sit where their fingerprints sent them).
 */
const LAYOUT = 'fingerprint-at-home';

/**
 * The dedup keys of a batch's valid lines, each as two 32-bit halves of the low 64 bits of its
 * MD5: the fingerprint the table keeps and the home that chooses its slot.
 */
export interface KeyHalves {
  fingerprints: Uint32Array;
  homes: Uint32Array;
}

/**
 * An open-addressing table of 32-bit fingerprints, each with the ingest second of its event,
 * placed from the slot its home names. A look-up matches only a fingerprint met on the way from
 * its own home, so a key that no stored event holds is mistaken for one about once in 2^32 times
 * the few slots it passes, whatever the store's size: with the fingerprint as its own slot, one
 * key in 430 was at 10M events stored, and each such look read a second's row groups of events.
 * Homes are not kept, so the table cannot double in place: once full it is built again from the
 * events table, twice as large. Zero marks an empty slot, so a zero fingerprint is kept as one (it
 * is a hint, never an answer).
 */
export class FingerprintTable {
  private fingerprints: Uint32Array;
  private seconds: Uint32Array;
  private size = 0;

  /** What a saved index holds of it. */
  sections(): Sections {
    return { fingerprints: this.fingerprints, seconds: this.seconds };
  }

  /** The table as saved; null when its sections are not such a table's. */
  static restored(sections: Sections, size: number): FingerprintTable | null {
    const { fingerprints, seconds } = sections;
    if (
      !(fingerprints instanceof Uint32Array) ||
      !(seconds instanceof Uint32Array) ||
      fingerprints.length !== seconds.length ||
      fingerprints.length < FIRST_CAPACITY ||
      (fingerprints.length & (fingerprints.length - 1)) !== 0 ||
      size > fingerprints.length * MAX_LOAD
    )
      return null;
    const table = new FingerprintTable(0);
    table.fingerprints = fingerprints;
    table.seconds = seconds;
    table.size = size;
    return table;
  }

  get entries(): number {
    return this.size;
  }

  get capacity(): number {
    return this.fingerprints.length;
  }

  /** Sized for `expected` entries, and at least `minimumCapacity` slots. */
  constructor(expected: number, minimumCapacity = FIRST_CAPACITY) {
    let capacity = FIRST_CAPACITY;
    while (capacity * MAX_LOAD < expected || capacity < minimumCapacity) capacity *= 2;
    this.fingerprints = new Uint32Array(capacity);
    this.seconds = new Uint32Array(capacity);
  }

  /** False when the table is full: it was not added, and the table must be built larger. */
  add(fingerprint: number, home: number, second: number): boolean {
    if (this.size + 1 > this.fingerprints.length * MAX_LOAD) return false;
    const mask = this.fingerprints.length - 1;
    let slot = home & mask;
    while (this.fingerprints[slot] !== 0) slot = (slot + 1) & mask;
    this.fingerprints[slot] = fingerprint || 1;
    this.seconds[slot] = second;
    this.size += 1;
    return true;
  }

  /** Adds the ingest second of every entry with this fingerprint on its way to `into`. */
  secondsOf(fingerprint: number, home: number, into: Set<number>): boolean {
    const wanted = fingerprint || 1;
    const mask = this.fingerprints.length - 1;
    let found = false;
    for (let slot = home & mask; ; slot = (slot + 1) & mask) {
      const held = this.fingerprints[slot] as number;
      if (held === 0) return found;
      if (held === wanted) {
        into.add(this.seconds[slot] as number);
        found = true;
      }
    }
  }
}

/**
 * What a batch adds to the index once it has committed: the keys of its valid lines (its stored
 * events' among them: a key it did not store only costs a look that finds nothing), the second
 * it was ingested in, and how many events it stored.
 */
export interface DedupAdditions {
  keys: KeyHalves;
  second: number;
  stored: number;
}

/** What a batch adds to the index, from its lines' keys and its counts. */
export function dedupAdditions(keys: KeyHalves, now: string, stored: number): DedupAdditions {
  return { keys, second: Math.floor(Date.parse(now) / 1000), stored };
}

/** The stored events a batch's lines name, and the halves of all its valid lines' keys. */
export interface FoundStored {
  storedKeys: StoredKeys;
  keys: KeyHalves;
}

/** The stored events a batch's dedup keys name (`ingest_stored_keys`), with their profiles. */
export type StoredKeys = TemporaryTable<'ingest_stored_keys'>;

/** What the events table held when the index was saved: its count and a sum of row hashes. */
interface EventsChecksum {
  events: number;
  events_sum: string;
}

/** What a saved dedup index holds besides its arrays. */
interface SavedHeader {
  checksum: EventsChecksum;
  entries: number;
  layout: typeof LAYOUT;
}

/**
 * The store's dedup keys, indexed in memory (docs/decisions.md, "Dedup index"): a batch asks it
 * which of its keys stored events may hold and reads only those events, found by their ingest
 * second, instead of every stored key. It follows commits only: a batch's keys are added after
 * its commit, and whenever the events table no longer holds the count the index knows (an
 * erasure, a tenant moved in or out, a batch whose additions were lost), it is built again from
 * the table at the next batch.
 */
export class DedupIndex {
  private table: FingerprintTable | null = null;
  private events = 0;
  /** Slots the next table built from the events table has at least: twice a full one's. */
  private minimumCapacity = FIRST_CAPACITY;
  /** The saved index is read once, for the process's first batch. */
  private savedRead = false;
  /** Where the table came from when last made: for tests. */
  source: 'saved' | 'tables' | null = null;

  /** The table's slots, 0 until a batch made it: for tests. */
  get capacity(): number {
    return this.table?.capacity ?? 0;
  }

  /** `savedPath`: where the index is saved between processes (null: never). */
  constructor(private readonly savedPath: string | null) {}

  private readonly ahead = new LoadAhead();

  /** Loads the table before any batch needs it, on a reader of its own (IdentifierIndex.prepare). */
  prepare(store: Store): Promise<unknown> {
    return this.ahead.start(store.read((session) => this.current(session)));
  }

  /** Makes `ingest_stored_keys`: the stored events holding a dedup key of the batch's lines. */
  async findStored(staged: Staged): Promise<FoundStored> {
    const session = sessionOf(staged);
    await this.ahead.settled();
    const table = await this.current(session);
    await session.run('dedup_index_create_stored_keys');
    const hits: number[] = [];
    const seconds = new Set<number>();
    const fingerprintParts: Uint32Array[] = [];
    const homeParts: Uint32Array[] = [];
    await session.scanUint32(
      'dedup_index_batch_fingerprints',
      undefined,
      ([fingerprints, homes]) => {
        fingerprintParts.push(fingerprints as Uint32Array);
        homeParts.push(homes as Uint32Array);
        (fingerprints as Uint32Array).forEach((fingerprint, row) => {
          if (table.secondsOf(fingerprint, (homes as Uint32Array)[row] as number, seconds))
            hits.push(fingerprint);
        });
      },
    );
    const keys = { fingerprints: joined(fingerprintParts), homes: joined(homeParts) };
    if (hits.length === 0)
      return { storedKeys: temporaryTable(session, 'ingest_stored_keys'), keys };
    const fingerprints = JSON.stringify(hits);
    for (const [from, to] of secondRanges(seconds)) {
      await session.run('dedup_index_find_stored', {
        fingerprints,
        from_us: from * 1_000_000,
        to_us: to * 1_000_000,
      });
    }
    // A key a stored event holds is in the index already: a replayed file adds nothing to it.
    const indexed = new Set<string>();
    await session.scanUint32('dedup_index_found_fingerprints', undefined, ([found, homes]) => {
      (found as Uint32Array).forEach((fingerprint, row) => {
        indexed.add(`${fingerprint}@${(homes as Uint32Array)[row]}`);
      });
    });
    return {
      storedKeys: temporaryTable(session, 'ingest_stored_keys'),
      keys: unindexed(keys, indexed),
    };
  }

  /**
   * After the batch's commit: its events are known. Should its stored count not be what the
   * events table gained, the next batch finds the counts apart and builds the index again; so
   * does a table too full for the batch's keys, twice as large.
   */
  committed(additions: DedupAdditions): void {
    const table = this.table;
    if (!table) return;
    const { fingerprints, homes } = additions.keys;
    for (let row = 0; row < fingerprints.length; row += 1) {
      if (!table.add(fingerprints[row] as number, homes[row] as number, additions.second)) {
        this.minimumCapacity = table.capacity * 2;
        this.table = null;
        return;
      }
    }
    this.events += additions.stored;
  }

  /**
   * Saves the index beside the database for the next process, when it follows the events table
   * as it is: once no batch runs. Its entries are a superset of the stored events' keys (a valid
   * line's key is added whether or not it was stored), which the next process may take as such.
   */
  async save(session: Session): Promise<void> {
    await this.ahead.settled();
    if (this.table === null || this.savedPath === null) return;
    const checksum = await session.one<EventsChecksum>('dedup_index_checksum');
    if (!checksum || Number(checksum.events) !== this.events) return;
    const header: SavedHeader = { checksum, entries: this.table.entries, layout: LAYOUT };
    await traced('dedup index save', () =>
      writeSavedIndex(this.savedPath as string, {
        header,
        sections: (this.table as FingerprintTable).sections(),
      }),
    );
  }

  /** The index the last process saved, if the events table is still what it was saved from. */
  private async restored(session: Session, events: number): Promise<FingerprintTable | null> {
    if (this.savedRead || this.savedPath === null) return null;
    this.savedRead = true;
    const path = this.savedPath;
    return traced('dedup index load', async () => {
      const saved = await readSavedIndex(path);
      if (saved === null) return null;
      const header = saved.header as Partial<SavedHeader>;
      if (header.layout !== LAYOUT || Number(header.checksum?.events) !== events) return null;
      const now = await session.one<EventsChecksum>('dedup_index_checksum');
      if (!now || String(now.events_sum) !== String(header.checksum?.events_sum)) return null;
      return FingerprintTable.restored(saved.sections, Number(header.entries));
    });
  }

  /**
   * The table, built again when the events table holds another count than it knows, or when the
   * last batch found it full.
   */
  private async current(session: Session): Promise<FingerprintTable> {
    const events = Number((await session.one<{ events: number }>('dedup_index_events'))?.events);
    if (this.table && events === this.events) return this.table;
    const saved = await this.restored(session, events);
    this.source = saved ? 'saved' : 'tables';
    if (saved) {
      this.table = saved;
      this.events = events;
      return saved;
    }
    const table = new FingerprintTable(events, this.minimumCapacity);
    await session.scanUint32(
      'dedup_index_scan',
      undefined,
      ([fingerprints, homes, seconds], rows) => {
        for (let row = 0; row < rows; row += 1)
          table.add(
            (fingerprints as Uint32Array)[row] as number,
            (homes as Uint32Array)[row] as number,
            (seconds as Uint32Array)[row] as number,
          );
      },
    );
    this.table = table;
    this.events = events;
    return table;
  }
}

/** The keys whose fingerprint and home are not among `indexed` (as `fingerprint@home`). */
function unindexed(keys: KeyHalves, indexed: Set<string>): KeyHalves {
  if (indexed.size === 0) return keys;
  const kept: number[] = [];
  keys.fingerprints.forEach((fingerprint, row) => {
    if (!indexed.has(`${fingerprint}@${keys.homes[row]}`)) kept.push(row);
  });
  return {
    fingerprints: Uint32Array.from(kept, (row) => keys.fingerprints[row] as number),
    homes: Uint32Array.from(kept, (row) => keys.homes[row] as number),
  };
}

function joined(parts: Uint32Array[]): Uint32Array {
  const all = new Uint32Array(parts.reduce((sum, part) => sum + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    all.set(part, offset);
    offset += part.length;
  }
  return all;
}

/** Seconds as half-open ranges [from, to), adjacent ones joined; one range past MAX_RANGES. */
function secondRanges(seconds: Set<number>): [number, number][] {
  const sorted = [...seconds].sort((a, b) => a - b);
  const ranges: [number, number][] = [];
  for (const second of sorted) {
    const last = ranges.at(-1);
    if (last && last[1] === second) last[1] = second + 1;
    else ranges.push([second, second + 1]);
  }
  if (ranges.length <= MAX_RANGES) return ranges;
  return [[(ranges[0] as [number, number])[0], (ranges.at(-1) as [number, number])[1]]];
}

const indexes = new WeakMap<Store, DedupIndex>();

/** The dedup index of a store, one per open store in this process. */
export function dedupIndexOf(store: Store): DedupIndex {
  let index = indexes.get(store);
  if (!index) {
    index = new DedupIndex(savedIndexPath(store, 'dedup'));
    indexes.set(store, index);
  }
  return index;
}
