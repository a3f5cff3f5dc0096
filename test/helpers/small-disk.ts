import { execFileSync } from 'node:child_process';
import { rmSync, statfsSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './temp-dirs.js';

export interface SmallDisk {
  dir: string;
  /** Bytes free on it now. */
  free(): number;
  /** Takes all but `leaveBytes` of the free space with a ballast file (the next call replaces it). */
  fillLeaving(leaveBytes: number): void;
  /** Deletes the ballast file: the space it took is free again. */
  freeBallast(): void;
  unmount(): void;
}

/**
 * A real filesystem of `sizeMiB` (tmpfs), so that a test fills a disk for real, mounted on a new
 * directory or on `at` (a directory cds writes in, hidden while it is mounted). Mounting needs
 * root (CAP_SYS_ADMIN); without it the test fails here, saying so, rather than skip.
 */
export function mountSmallDisk(sizeMiB: number, at?: string): SmallDisk {
  const dir = at ?? tempDir('cds-small-disk-');
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m`, 'tmpfs', dir], {
      stdio: 'pipe',
    });
  } catch (error) {
    throw new Error(
      `a disk-full test mounts a ${sizeMiB} MiB tmpfs and needs root for it (mount -t tmpfs): ${String((error as { stderr?: unknown }).stderr ?? error)}`,
    );
  }
  const ballast = join(dir, 'ballast');
  const free = () => {
    const stats = statfsSync(dir);
    return stats.bavail * stats.bsize;
  };
  return {
    dir,
    free,
    fillLeaving(leaveBytes) {
      rmSync(ballast, { force: true });
      execFileSync('fallocate', ['-l', String(Math.max(0, free() - leaveBytes)), ballast]);
    },
    freeBallast() {
      rmSync(ballast, { force: true });
    },
    unmount() {
      // Lazily where cds may still hold a file open on it; a directory of cds's own is left.
      execFileSync('umount', at === undefined ? [dir] : ['-l', dir]);
      if (at === undefined) rmSync(dir, { recursive: true, force: true });
    },
  };
}
