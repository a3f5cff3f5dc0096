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
 * An open-addressing table of 32-bit fingerprints, each with the ingest second of its event.
 * Fingerprints are the low bits of an MD5, already uniform: the slot is the fingerprint itself.
 * Zero marks an empty slot, so a zero fingerprint is kept as one (it is a hint, never an answer).
 */
class FingerprintTable {
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

  /** Sized for `expected` entries at once: building it from a large table doubles it never. */
  constructor(expected: number) {
    let capacity = FIRST_CAPACITY;
    while (capacity * MAX_LOAD < expected) capacity *= 2;
    this.fingerprints = new Uint32Array(capacity);
    this.seconds = new Uint32Array(capacity);
  }

  add(fingerprint: number, second: number): void {
    if (this.size + 1 > this.fingerprints.length * MAX_LOAD) this.grow();
    this.place(fingerprint || 1, second);
    this.size += 1;
  }

  /** Adds the ingest second of every entry with this fingerprint to `into`. */
  secondsOf(fingerprint: number, into: Set<number>): boolean {
    const wanted = fingerprint || 1;
    const mask = this.fingerprints.length - 1;
    let found = false;
    for (let slot = wanted & mask; ; slot = (slot + 1) & mask) {
      const held = this.fingerprints[slot] as number;
      if (held === 0) return found;
      if (held === wanted) {
        into.add(this.seconds[slot] as number);
        found = true;
      }
    }
  }

  private place(fingerprint: number, second: number): void {
    const mask = this.fingerprints.length - 1;
    let slot = fingerprint & mask;
    while (this.fingerprints[slot] !== 0) slot = (slot + 1) & mask;
    this.fingerprints[slot] = fingerprint;
    this.seconds[slot] = second;
  }

  private grow(): void {
    const fingerprints = this.fingerprints;
    const seconds = this.seconds;
    this.fingerprints = new Uint32Array(fingerprints.length * 2);
    this.seconds = new Uint32Array(seconds.length * 2);
    for (let slot = 0; slot < fingerprints.length; slot += 1) {
      const fingerprint = fingerprints[slot] as number;
      if (fingerprint !== 0) this.place(fingerprint, seconds[slot] as number);
    }
  }
}

/**
 * What a batch adds to the index once it has committed: the fingerprints of its valid lines'
 * keys (its stored events' among them: a key it did not store only costs a look that finds
 * nothing), the second it was ingested in, and how many events it stored.
 */
export interface DedupAdditions {
  fingerprints: Uint32Array;
  second: number;
  stored: number;
}

/** What a batch adds to the index, from its lines' fingerprints and its counts. */
export function dedupAdditions(
  fingerprints: Uint32Array,
  now: string,
  stored: number,
): DedupAdditions {
  return { fingerprints, second: Math.floor(Date.parse(now) / 1000), stored };
}

/** The stored events a batch's lines name, and the fingerprints of all its valid lines' keys. */
export interface FoundStored {
  storedKeys: StoredKeys;
  fingerprints: Uint32Array;
}

/** The stored events a batch's dedup keys name (`ingest_stored_keys`), with their profiles. */
export type StoredKeys = TemporaryTable<'ingest_stored_keys'>;

/**
 * The store's dedup keys, indexed in memory (docs/decisions.md, "Dedup index"): a batch asks it
 * which of its keys stored events may hold and reads only those events, found by their ingest
 * second, instead of every stored key. It follows commits only: a batch's keys are added after
 * its commit, and whenever the events table no longer holds the count the index knows (an
 * erasure, a tenant moved in or out, a batch whose additions were lost), it is built again from
 * the table at the next batch.
 */
/** What the events table held when the index was saved: its count and a sum of row hashes. */
interface EventsChecksum {
  events: number;
  events_sum: string;
}

/** What a saved dedup index holds besides its arrays. */
interface SavedHeader {
  checksum: EventsChecksum;
  entries: number;
}

export class DedupIndex {
  private table: FingerprintTable | null = null;
  private events = 0;
  /** The saved index is read once, for the process's first batch. */
  private savedRead = false;
  /** Where the table came from when last made: for tests. */
  source: 'saved' | 'tables' | null = null;

  /** `savedPath`: where the index is saved between processes (null: never). */
  constructor(private readonly savedPath: string | null) {}

  /** Makes `ingest_stored_keys`: the stored events holding a dedup key of the batch's lines. */
  async findStored(staged: Staged): Promise<FoundStored> {
    const session = sessionOf(staged);
    const table = await this.current(session);
    await session.run('dedup_index_create_stored_keys');
    const hits: number[] = [];
    const seconds = new Set<number>();
    const parts: Uint32Array[] = [];
    await session.scanUint32('dedup_index_batch_fingerprints', undefined, ([fingerprints]) => {
      parts.push(fingerprints as Uint32Array);
      for (const fingerprint of fingerprints as Uint32Array) {
        if (table.secondsOf(fingerprint, seconds)) hits.push(fingerprint);
      }
    });
    const indexed = new Set<number>();
    if (hits.length > 0) {
      const fingerprints = JSON.stringify(hits);
      for (const [from, to] of secondRanges(seconds)) {
        await session.run('dedup_index_find_stored', {
          fingerprints,
          from_us: from * 1_000_000,
          to_us: to * 1_000_000,
        });
      }
      await session.scanUint32('dedup_index_found_fingerprints', undefined, ([found]) => {
        for (const fingerprint of found as Uint32Array) indexed.add(fingerprint);
      });
    }
    return {
      storedKeys: temporaryTable(session, 'ingest_stored_keys'),
      // A key a stored event holds is in the index already: a replayed file adds nothing to it.
      fingerprints:
        indexed.size === 0 ? joined(parts) : joined(parts).filter((f) => !indexed.has(f)),
    };
  }

  /**
   * After the batch's commit: its events are known. Should its stored count not be what the
   * events table gained, the next batch finds the counts apart and builds the index again.
   */
  committed(additions: DedupAdditions): void {
    if (!this.table) return;
    for (const fingerprint of additions.fingerprints) this.table.add(fingerprint, additions.second);
    this.events += additions.stored;
  }

  /** The table, built again when the events table holds another count than it knows. */
  /**
   * Saves the index beside the database for the next process, when it follows the events table
   * as it is: once no batch runs. Its entries are a superset of the stored events' keys (a valid
   * line's key is added whether or not it was stored), which the next process may take as such.
   */
  async save(session: Session): Promise<void> {
    if (this.table === null || this.savedPath === null) return;
    const checksum = await session.one<EventsChecksum>('dedup_index_checksum');
    if (!checksum || Number(checksum.events) !== this.events) return;
    const header: SavedHeader = { checksum, entries: this.table.entries };
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
      const header = saved.header as SavedHeader;
      if (Number(header.checksum.events) !== events) return null;
      const now = await session.one<EventsChecksum>('dedup_index_checksum');
      if (!now || String(now.events_sum) !== String(header.checksum.events_sum)) return null;
      return FingerprintTable.restored(saved.sections, Number(header.entries));
    });
  }

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
    const table = new FingerprintTable(events);
    await session.scanUint32('dedup_index_scan', undefined, ([fingerprints, seconds], rows) => {
      for (let row = 0; row < rows; row += 1)
        table.add(
          (fingerprints as Uint32Array)[row] as number,
          (seconds as Uint32Array)[row] as number,
        );
    });
    this.table = table;
    this.events = events;
    return table;
  }
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
