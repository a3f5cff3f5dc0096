import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Context } from '../context.js';
import { componentLog } from '../telemetry/log.js';
import {
  type RegistrySnapshot,
  readRegistryFile,
  readRegistrySnapshot,
  writeRegistryFile,
} from './registry.js';

/** Where else a snapshot goes: in cluster mode, the registry bucket (registry-bus.ts). */
export interface RegistryOutlet {
  publish(snapshot: RegistrySnapshot): Promise<void>;
}

/**
 * Versions one owning process may publish before it takes a new epoch. A version is
 * `epoch * VERSIONS_PER_EPOCH + sequence`: exact in a JSON number for 9 × 10⁹ epochs.
 */
export const VERSIONS_PER_EPOCH = 1_000_000;

/**
 * Writes `registry.json` for the process that owns the database, newest state last. Publishes
 * run one at a time, each reading the database after the one before it, and take versions in
 * that order, so a file never replaces a newer one. A caller joins the publish that has not
 * begun reading yet, which will read after the caller's write committed: a burst of writes
 * costs two publishes, not one each.
 *
 * Across processes the epoch orders them: only the owner of the database publishes, and each
 * owner takes an epoch above every earlier one (kept in the database) before its first publish.
 */
export class RegistryPublisher {
  private bucket: RegistryOutlet | null = null;
  private epoch = 0;
  private sequence = VERSIONS_PER_EPOCH;
  private tail: Promise<unknown> = Promise.resolve();
  private waiting: Promise<RegistrySnapshot> | null = null;

  constructor(private readonly context: Context) {}

  /** Cluster mode: every snapshot published from now on is put in the registry bucket too. */
  attachBucket(bucket: RegistryOutlet): void {
    this.bucket = bucket;
  }

  publish(): Promise<RegistrySnapshot> {
    if (this.waiting) return this.waiting;
    const next = this.tail.then(() => {
      this.waiting = null;
      return this.publishNow();
    });
    this.waiting = next;
    this.tail = next.catch(() => undefined);
    return next;
  }

  private async publishNow(): Promise<RegistrySnapshot> {
    const version = await this.nextVersion();
    const { store, clock, dataDir } = this.context;
    const snapshot = await store.read((session) =>
      readRegistrySnapshot(session, clock.now().toISOString(), version),
    );
    // A file that cannot be written is reported, not thrown: the write it follows is committed.
    await writeRegistryFile(dataDir.registryPath, snapshot).catch((error: unknown) => {
      componentLog('registry').error(
        { path: dataDir.registryPath, err: error },
        'registry.json could not be written; collectors run by cds collect keep the one before until the next change is written',
      );
    });
    // Unlike the file, a bucket that did not take the change fails the publish: the write is
    // answered 503 rather than 204 while collectors still accept what it revoked.
    await this.bucket?.publish(snapshot);
    return snapshot;
  }

  private async nextVersion(): Promise<number> {
    if (this.sequence + 1 >= VERSIONS_PER_EPOCH) {
      this.epoch = await this.takeEpoch();
      this.sequence = 0;
    }
    this.sequence += 1;
    return this.epoch * VERSIONS_PER_EPOCH + this.sequence;
  }

  /** A new epoch, above the database's and the file's (a database restored from a backup is behind it). */
  private async takeEpoch(): Promise<number> {
    const path = this.context.dataDir.registryPath;
    const onDisk = await readRegistryFile(path).then(
      (snapshot) => Math.floor(snapshot.version / VERSIONS_PER_EPOCH),
      () => 0,
    );
    await removeTempFiles(path);
    const row = await this.context.store.write((session) =>
      session.one<{ epoch: number }>('registry_next_epoch', { floor: onDisk }),
    );
    if (!row) throw new Error('registry_epoch has no row');
    return row.epoch;
  }
}

/** Temp files a process that owned the database left when it died between writing and renaming. */
async function removeTempFiles(path: string): Promise<void> {
  const prefix = `${basename(path)}.`;
  const names = await readdir(dirname(path)).catch(() => []);
  await Promise.all(
    names
      .filter((name) => name.startsWith(prefix) && name.endsWith('.tmp'))
      .map((name) => rm(join(dirname(path), name), { force: true })),
  );
}
